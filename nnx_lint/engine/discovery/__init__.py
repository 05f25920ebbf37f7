"""Which files a directory walk finds: ``.gitignore`` handling (:mod:`nnx_lint.engine.discovery.gitignore`),
which never hides a file git tracks (:mod:`nnx_lint.engine.discovery.tracked`)."""
