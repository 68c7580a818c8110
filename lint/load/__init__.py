"""Loading: files and directories to read, YAML/JSON text to documents with the line and column
of every field, and `# numaguard: ignore` comments. Knows nothing of Kubernetes or rules."""
