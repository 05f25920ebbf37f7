"""Which files a directory walk finds: ``.gitignore`` handling (:mod:`nnx_lint.engine.discovery.gitignore`)."""
