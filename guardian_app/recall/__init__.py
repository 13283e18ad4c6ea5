"""Recall: chunking the files and transcripts, the index, embeddings, the search and its evaluation."""
