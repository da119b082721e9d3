"""Admission of objects: CRD structural schemas, defaulting, pruning, validation and CEL rules.

Pure functions over JSON-shaped dicts; the only I/O is reading kubernetes-validate's packaged schemas.
"""
