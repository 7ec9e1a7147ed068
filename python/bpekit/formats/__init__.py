"""Vocabulary file formats: GPT-2 ``vocab.json`` + ``merges.txt``, ``.tiktoken``, HF ``tokenizer.json``."""
