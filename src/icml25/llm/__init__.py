"""Language-model access: the ``ChatModel`` interface, its backends, a response cache, a code sandbox.

Import the submodule you need (``icml25.llm.chat``, ``icml25.llm.sandbox``, ...); this package
re-exports nothing, so the sandbox can be used without importing torch or transformers.
"""
