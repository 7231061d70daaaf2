"""Tools that read the task record: hang reports now; race and deadlock checks later."""
