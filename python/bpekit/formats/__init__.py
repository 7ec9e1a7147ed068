"""Tokenizer file formats: GPT-2 ``vocab.json`` + ``merges.txt`` and bpekit's folder
(``gpt2``, ``folder``), ``.tiktoken`` (``tiktoken``), HF ``tokenizer.json`` (``hf``,
``hf_load``), saving in any of them (``convert``) and the pickled state (``pickled``).

Each reads into and writes from the core encoder and plain data (``parts``), never the
``Tokenizer`` class, which sits a layer above and loads and saves itself through them.
"""
