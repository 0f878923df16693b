"""The `placement` command (docs/hub-admins.md, 'CLI'): one module per verb, manifest loading,
CRD generation.

The entry point is `controllers.cli.main:main`; `python -m controllers.cli` runs it too.
"""

__all__: list[str] = []
