"""What bpekit runs for a ``tokenizers.Tokenizer`` in its current state: a
``bpekit.Tokenizer`` of the same ``tokenizer.json`` and the post-processor's template,
or the reason bpekit cannot (the JSON path it refuses).

The state is read from ``tokenizers`` itself (``to_str()``), after everything
transformers did to it (added tokens from ``tokenizer_config.json``, a post-processor
for ``add_bos_token``, a pre-tokenizer's ``add_prefix_space``). ``state_key`` is a cheap
fingerprint of what can change afterwards (~10 us): components, the model's settings,
the added tokens; a new key means a new plan.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass
from typing import Any

from bpekit.formats.hf_load import read_hf_data
from bpekit.hf_transformers.encoding import NO_TEMPLATE, Template
from bpekit.tokenizer import Tokenizer

__all__ = ["PLANS", "Plan", "make_plan", "state_key"]

_COMPONENTS = ("normalizer", "pre_tokenizer", "post_processor", "decoder")
_MODEL_SETTINGS = (
    "dropout",
    "unk_token",
    "continuing_subword_prefix",
    "end_of_word_suffix",
    "fuse_unk",
    "byte_fallback",
    "ignore_merges",
)


@dataclass(frozen=True)
class Plan:
    """bpekit's side of one state of a ``tokenizers.Tokenizer``."""

    tok: Tokenizer
    template: Template
    #: Ids of the added tokens marked special (``skip_special_tokens``).
    special_ids: frozenset[int]
    #: Ids ``tokenizers`` knows: ``decode`` of any other id goes to it.
    n_ids: int
    #: Whether ``decode`` runs on bpekit: every added token decodes as in ``tokenizers``
    #: (0.22 decodes a normalized one as its text, not its normalized text).
    decode_ok: bool
    #: A hash of the ``tokenizer.json`` it was made of (truncation and padding left
    #: out): a pickled backend carries it, and a process forked after the plan was made
    #: finds the plan in ``PLANS`` rather than making it again.
    token: str


#: The plans made in this process, by token; a forked child (``datasets.map(num_proc=N)``,
#: a DataLoader's workers) inherits them. Making OLMo 2's takes ~1 s, most of a worker's
#: share of a 19 MB map on 2 processes.
PLANS: dict[str, Plan] = {}
_KEEP = 8


def state_key(hf: Any) -> tuple[Any, ...]:
    """What of ``hf`` a plan depends on, besides the model's vocab and merges (which
    only a new model changes, and setting one makes a new plan)."""
    parts: list[Any] = []
    for name in _COMPONENTS:
        comp = getattr(hf, name)
        parts.append(None if comp is None else comp.__getstate__())
    model = hf.model
    # A model trained in place (through another Tokenizer sharing it) changes its size.
    parts.append((type(model).__name__, hf.get_vocab_size(with_added_tokens=False)))
    parts.extend(getattr(model, k, None) for k in _MODEL_SETTINGS)
    parts.extend(
        (i, t.content, t.special, t.normalized, t.lstrip, t.rstrip, t.single_word)
        for i, t in hf.get_added_tokens_decoder().items()
    )
    return tuple(parts)


def make_plan(hf: Any) -> Plan | str:
    """The plan for ``hf`` as it is now, or why there is none (one line)."""
    data = json.loads(hf.to_str())
    # transformers sets these per call; bpekit applies them to its ids itself.
    data["truncation"] = data["padding"] = None
    with warnings.catch_warnings():
        # tokenizers warned of the same ids when it loaded the file.
        warnings.simplefilter("ignore")
        try:
            parts = read_hf_data(data, name="transformers")
        except ValueError as e:
            return f"tokenizer.json: {e}"
    template = _template(data.get("post_processor"))
    if isinstance(template, str):
        return template
    tok = Tokenizer._from_parts(parts)
    added = hf.get_added_tokens_decoder()
    special = frozenset(i for i, t in added.items() if t.special)
    decode_ok = all(tok.decode([i]) == hf.decode([i], skip_special_tokens=False) for i in added)
    token = hashlib.sha1(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()
    plan = Plan(tok, template, special, hf.get_vocab_size(with_added_tokens=True), decode_ok, token)
    if len(PLANS) >= _KEEP:
        PLANS.pop(next(iter(PLANS)))
    PLANS[token] = plan
    return plan


def _template(spec: Any) -> Template | str:
    """The single-sequence template of a post-processor that ``read_hf_data`` accepted:
    ``None``, ``ByteLevel``, ``TemplateProcessing`` or a ``Sequence`` of them."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if node is None:
            return
        if node.get("type") == "Sequence":
            for inner in node.get("processors", []):
                walk(inner)
        elif node.get("type") == "TemplateProcessing":
            found.append(node)

    walk(spec)
    if not found:
        return NO_TEMPLATE
    if len(found) > 1:
        return "tokenizer.json: post_processor: more than one TemplateProcessing"
    node = found[0]
    specials = node.get("special_tokens", {})
    out: dict[str, list[Any]] = {k: [] for k in ("ids", "types", "tokens", "sids", "stypes", "stokens")}
    seq_type, after = 0, False
    for piece in node["single"]:
        if "Sequence" in piece:
            seq_type, after = int(piece["Sequence"].get("type_id", 0)), True
            continue
        ref = piece["SpecialToken"]
        entry = specials[ref["id"]]
        ids, tokens = list(entry["ids"]), list(entry.get("tokens", []))
        if len(tokens) != len(ids):
            where = f"post_processor.special_tokens[{ref['id']!r}]"
            return f"tokenizer.json: {where}: ids and tokens differ in length"
        prefix = "s" if after else ""
        out[prefix + "ids"] += ids
        out[prefix + "types"] += [int(ref.get("type_id", 0))] * len(ids)
        out[prefix + "tokens"] += tokens
    return Template(
        out["ids"], out["sids"], out["types"], out["stypes"], out["tokens"], out["stokens"], seq_type
    )
