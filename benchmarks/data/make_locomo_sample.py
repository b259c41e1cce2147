"""Cut the bundled LoCoMo sample out of a full LoCoMo file (kept to show exactly how the sample was made).

The sample is the first SESSIONS sessions of the first conversation (conv-26), in LoCoMo's own format, with the
questions whose evidence lies entirely in those sessions (questions without evidence are left out), and the
observations, session summaries and event summaries of those sessions only.

Run: .venv/bin/python benchmarks/data/make_locomo_sample.py /path/to/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

SESSIONS = 4
OUT = Path(__file__).parent / "locomo_sample.json"


def _evidence_sessions(raw: list[str]) -> set[int]:
    """The session numbers of a question's evidence ids (malformed ids such as ``"D8:6; D9:17"`` split)."""
    out = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                out.add(int(m.group(1)))
    return out


def cut(sample: dict, sessions: int) -> dict:
    keep = range(1, sessions + 1)
    conv = sample["conversation"]
    conversation = {"speaker_a": conv["speaker_a"], "speaker_b": conv["speaker_b"]}
    for n in keep:
        conversation[f"session_{n}_date_time"] = conv[f"session_{n}_date_time"]
        conversation[f"session_{n}"] = conv[f"session_{n}"]
    qa = [q for q in sample["qa"] if (found := _evidence_sessions(q.get("evidence", []))) and found <= set(keep)]
    return {
        "qa": qa,
        "conversation": conversation,
        "event_summary": {
            k: v for k, v in sample["event_summary"].items() if k in {f"events_session_{n}" for n in keep}
        },
        "observation": {
            k: v for k, v in sample["observation"].items() if k in {f"session_{n}_observation" for n in keep}
        },
        "session_summary": {
            k: v for k, v in sample["session_summary"].items() if k in {f"session_{n}_summary" for n in keep}
        },
        "sample_id": sample["sample_id"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", help="a LoCoMo file (locomo10.json or locomo_dev.json)")
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    args = parser.parse_args()
    samples = json.loads(Path(args.source).read_text(encoding="utf-8"))
    first = next(s for s in samples if s["sample_id"] == "conv-26")
    out = [cut(first, args.sessions)]
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    turns = sum(len(out[0]["conversation"][f"session_{n}"]) for n in range(1, args.sessions + 1))
    print(f"{OUT}: {turns} turns, {len(out[0]['qa'])} questions")


if __name__ == "__main__":
    main()
