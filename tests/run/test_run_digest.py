"""An item's content digest (``ItemResult.content_digest``, which ``--weval-repeat=auto`` and the
history compare across runs) is the sha256 of the JSON of what its answers depend on, whichever
items of the same prompt and blueprint were digested before it (their prompt's and
configuration's JSON is encoded once and reused)."""

from __future__ import annotations

import hashlib
import json

from pytest_weval.blueprint import parse_blueprint_text
from pytest_weval.run.pipeline import ItemWork, blank_result, content_digest

BLUEPRINT = """\
models: [openai:a, openai:b]
evaluationConfig:
  judges: [{model: "openai:judge", approach: holistic}]
system: Be brief, é.
---
- id: p0
  prompt: question 0
  should: [names the question]
- id: p1
  prompt: question 1
  should: [names the question]
"""


def test_the_digest_is_the_sha256_of_what_the_answers_depend_on():
    blueprint = parse_blueprint_text(BLUEPRINT, fmt="yaml", rel_path="d.yml")
    works = [
        ItemWork(nodeid=f"{p.id}-{m.id}", blueprint=blueprint, prompt=p, model=m, temperature=t, system_index=0)
        for p in blueprint.prompts
        for m in blueprint.models
        for t in (None, 0.5)
    ]
    for threshold in (0.5, 0.75):
        for work in works * 2:  # the second round reuses what the first encoded
            what = [
                work.effective_model_id,
                work.system_prompt,
                work.prompt.raw,
                threshold,
                work.blueprint.evaluation_config,
            ]
            expected = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:32]
            assert content_digest(work, threshold) == expected
    assert len({content_digest(w, 0.5) for w in works}) == len(works)


def test_an_items_blank_result_records_its_work_as_the_work_says():
    """``blank_result`` reads the work's effective model id and system prompt once for the
    record and its digest: the same values the work's properties give."""
    blueprint = parse_blueprint_text(BLUEPRINT, fmt="yaml", rel_path="d.yml")
    for prompt in blueprint.prompts:
        for model in blueprint.models:
            for temperature in (None, 0, 0.5):
                work = ItemWork(f"{prompt.id}-{model.id}", blueprint, prompt, model, temperature, 0, sample=3)
                result = blank_result(work, 0.75)
                assert result.content_digest == content_digest(work, 0.75)
                assert result.effective_model_id == work.effective_model_id
                assert result.system_prompt == work.system_prompt == "Be brief, é."
                assert result.temperature == work.sent_temperature and result.sample == 3
                assert (result.outcome, result.threshold, result.prompt_id) == ("error", 0.75, prompt.id)
