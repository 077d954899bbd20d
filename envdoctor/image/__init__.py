"""Container images read as they lie on disk (an OCI layout, an OCI or docker-save tarball), never extracted."""
