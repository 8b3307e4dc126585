"""Reports: the model (`model`), the file's layout (`fileformat`), the writer with its
journal and lock (`journal`), the schema and its check (`schema`, `check`), and what
maintainers read: `render`, `compare`, `redact`, `bundle`, `evidence`, `verdict`;
`stream` reads a report of any size a trial at a time."""
