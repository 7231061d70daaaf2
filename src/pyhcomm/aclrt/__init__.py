"""The acl runtime calls (``acl_rt.h``) as raising Python functions with the C names.

The pyACL facade (:mod:`pyhcomm.acl`) and the Pythonic tier are built on these.
"""
