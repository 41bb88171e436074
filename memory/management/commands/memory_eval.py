"""Long-term memory retrieval on LoCoMo: ``manage.py memory_eval --dataset FILE``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.context.evaluation.locomo import LocomoFormatError
from memory.context.evaluation.retrieval import METRICS, run_locomo
from memory.long_term.selectors import default_mode
from rag.graph.retrieval import STAGES
from rag.search import SEARCH_MODES


class Command(BaseCommand):
    help = (
        "Write each LoCoMo conversation of FILE (original JSON layout) into a fresh agent's "
        "long-term memory, ask every question through long-term search and score the evidence "
        "turns it returns: Recall@5, Recall@10, nDCG@10 per category and over categories 1-4, "
        "search latency p50/p95. The temporary accounts are deleted at the end."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, type=Path, help="a LoCoMo JSON file")
        parser.add_argument(
            "--conversations", default="", help="comma-separated sample ids (default: all)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--top-k", type=int, default=10)
        parser.add_argument(
            "--mode",
            default=None,
            choices=SEARCH_MODES,
            help="the mode of the main report (graph: link each conversation's turns to the "
            "knowledge graph, then search it); default: long-term search's own (graph, or "
            "hybrid with --stages)",
        )
        parser.add_argument(
            "--modes",
            default=",".join(SEARCH_MODES),
            help="comma-separated modes also reported under 'modes' (default: every mode)",
        )
        parser.add_argument(
            "--stages",
            default="",
            help=f"a hybrid search's stages, comma-separated ({', '.join(STAGES)})",
        )
        parser.add_argument("--max-hops", type=int, default=2)
        parser.add_argument("--weights", default="", help='e.g. "vector=0.4,keyword=0.6"')
        parser.add_argument(
            "--context",
            action="store_true",
            help="evaluate context assembly instead: write each conversation through the "
            "conversations' services and score the evidence turns among each context's turns",
        )
        parser.add_argument(
            "--budget", type=int, default=2000, help="the context's token budget (--context)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        ids = {i.strip() for i in options["conversations"].split(",") if i.strip()}
        try:
            weights = {
                name.strip(): float(value)
                for name, value in (
                    pair.split("=", 1) for pair in options["weights"].split(",") if pair
                )
            }
        except ValueError as exc:
            raise CommandError(f"Bad --weights {options['weights']!r}: {exc}") from exc
        quiet = options["json"]
        modes = [m.strip() for m in options["modes"].split(",") if m.strip()]
        unknown = sorted(set(modes) - set(SEARCH_MODES))
        if unknown:
            raise CommandError(
                f"Unknown --modes {', '.join(unknown)}: one of {', '.join(SEARCH_MODES)}"
            )

        def progress(message: str) -> None:
            if not quiet:
                sys.stderr.write(message + "\n")

        if options["context"]:
            self._context(options, ids, progress)
            return
        stages = [s.strip() for s in options["stages"].split(",") if s.strip()]
        try:
            report = run_locomo(
                options["dataset"],
                sample_ids=ids or None,
                top_k=options["top_k"],
                weights=weights or None,
                mode=options["mode"] or default_mode(stages),
                modes=modes,
                on_progress=progress,
                stages=stages,
                max_hops=options["max_hops"],
            )
        except LocomoFormatError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        self.stdout.write(
            f"{', '.join(report['conversations'])}: {report['entries']} entries, "
            f"{report['questions_scored']} questions scored (mode {report['mode']}"
            f"{' stages ' + '+'.join(report['stages']) if report['stages'] else ''}, "
            f"weights {report['weights']}, top_k {report['top_k']})"
        )
        header = f"{'category':22} {'n':>4} " + " ".join(f"{m:>9}" for m in METRICS)
        self.stdout.write(header)
        rows = [
            (f"{number} {block['name']}", block) for number, block in report["categories"].items()
        ]
        if report["overall_1_4"]:
            rows.append(("overall 1-4", report["overall_1_4"]))
        for label, block in rows:
            self.stdout.write(
                f"{label:22} {block['questions']:>4} "
                + " ".join(f"{block[m]:9.4f}" for m in METRICS)
            )
        if "latency_ms" in report:
            lat, search = report["latency_ms"], report["search_ms_excluding_embedding"]
            self.stdout.write(
                f"search latency p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms "
                f"(without the query embedding: p50 {search['p50']:.1f}, p95 {search['p95']:.1f})"
            )
        for name, block in report["modes"].items():
            overall = block["overall_1_4"] or {}
            self.stdout.write(
                f"mode {name:8} overall 1-4 "
                + " ".join(f"{m} {overall.get(m, 0.0):.4f}" for m in METRICS)
            )

    def _context(self, options: dict[str, Any], ids: set[str], progress: Any) -> None:
        from memory.context.assembly import MAX_BUDGET, MIN_BUDGET
        from memory.context.evaluation.context import run_locomo_context

        if not MIN_BUDGET <= options["budget"] <= MAX_BUDGET:
            raise CommandError(f"--budget must be from {MIN_BUDGET} to {MAX_BUDGET}")
        try:
            report = run_locomo_context(
                options["dataset"],
                budget=options["budget"],
                sample_ids=ids or None,
                on_progress=progress,
            )
        except LocomoFormatError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        self.stdout.write(
            f"{', '.join(report['conversations'])}: {report['questions_scored']} questions, "
            f"budget {report['budget']} tokens"
        )
        self.stdout.write(f"{'category':22} {'n':>4} {'evidence recall':>16} {'tokens':>8}")
        rows = [(f"{n} {b['name']}", b) for n, b in report["categories"].items()]
        if report["overall_1_4"]:
            rows.append(("overall 1-4", report["overall_1_4"]))
        for label, block in rows:
            self.stdout.write(
                f"{label:22} {block['questions']:>4} {block['evidence_recall']:16.4f} "
                f"{block['tokens_mean']:8.1f}"
            )
        if "latency_ms" in report:
            lat, own = report["latency_ms"], report["assembly_ms_excluding_embedding"]
            self.stdout.write(
                f"tokens max {report['tokens_max']}; latency p50 {lat['p50']:.1f} ms, p95 "
                f"{lat['p95']:.1f} ms (without the query embedding: p50 {own['p50']:.1f}, "
                f"p95 {own['p95']:.1f})"
            )
