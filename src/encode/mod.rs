//! Encoding: ranks, byte-pair merge of one piece, piece cache, batch and file encoding.
