"""The ray.io/v1 API: models, constants, the operator Configuration, validation and CRD generation."""
