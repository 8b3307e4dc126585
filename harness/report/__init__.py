"""Reports: the model (`model`), the file's layouts (`fileformat`) and reading one a part
at a time (`reader`), the writer with its journal and lock (`journal`, `lock`), the
schema and its check (`schema`, `check`), and what maintainers read: one pass over the
trials (`digest`), then `render`, `compare`, `redact`, `bundle`, `evidence`, `verdict`.
"""
