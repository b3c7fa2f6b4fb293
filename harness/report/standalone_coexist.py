"""Standalone reproducers of the coexist family's failing cases (suites/coexist), minimal by construction.

The family's full script inlines the probe a check sends to a fresh interpreter (suites/coexist/living.py
records seven groups of torch facts where a failing case reads one; the census its scanner and resolver),
and a reduction freezes those probes whole because a frozen check calls them: 141-334 lines after
`harness reduce`. Where the failing run's message names what failed, this module writes only that:

- `living`, a bridge that does not import (`a fresh process importing torchax, jax exited 1 ...`): a
  fresh interpreter importing the modules of that order, in that order; the same failure statement as
  the suite's run_fresh (suites/coexist/fresh.py), word for word;
- `living`, a torch feature that differs after importing the bridge (`... torch's compile differs from a
  fresh process without it: KEY: A -> B`): the facts the message names, and only those, computed in a
  fresh interpreter with only torch imported and one with the bridge and jax imported (as the suite
  orders them), compared as the suite compares them (FACTS: each fact's code, the probe's own; a
  test checks each against suites/coexist/living.py's probe). The rng facts are draws in sequence
  after one seed (`torch.manual_seed(1234)`), so one alone would be another draw: where the message
  names any, the script replays the probe's whole rng sequence from that seed, in its order, and
  compares it whole (SEQUENCES);
- `living`, the two import orders differ (`test_import_order_gives_the_same_results`: `BRIDGE LABEL:
  importing jax first, then BRIDGE, differs from BRIDGE first ...: GROUP: KEY: A -> B`): the facts named,
  the same way, in a fresh interpreter importing jax then the bridge and one importing the bridge then
  jax; the groups beyond torch's are jax's state (FACTS["jax"]) and the scenarios through the bridge,
  each the probe's own function (FACTS["scenario"]; only the bridge's own). Neither process compiles:
  the suite's bridge-first process runs torch.compile's three functions before the facts it compares
  (its facts are shared with the feature case), the short script does not;
- `census`, APIs the bridge uses that this jax or torch lacks: each API the message names with the
  site it names; an API counts while the bridge's file there still names it and jax (or torch)
  resolves it as absent, part by part as suites/coexist/resolve.py does, its detail as the census
  words it;
- `declared`, packages the bridge's modules import that its metadata does not declare: the suite's
  import hook while a fresh interpreter imports the bridge and calls its entry points
  (suites/coexist/declared.py's import_probe), then its Requires-Dist closure (declared_closure's rules;
  a test compares the two on every distribution of the host) and the suite's message. Where the message
  names a package that was not installed (`installed: no (STEP)`) or one the bridge's extras declare,
  the script also runs the suite's steps (a ModuleNotFoundError in a step's chain, the file that raised
  it, the bridge module that file is) and names the extras, as `undeclared` does; where it does not,
  those 16 lines are left out.

What comes from the results file (the message) is data: each value is checked against a grammar (the
order among the two the case can start, a fact's key among FACTS, an API a dotted name of jax or of
torch.ops, a site a `.py:LINE` path under the bridge's folder, a step among the suite's two) and written
only as a literal (`ascii()`); the message only picks among fixed texts and gives those literals. Where
anything does not parse (another family's message, a fact not in FACTS or another bridge's scenario, a
fact one side did not record, a message the run cut short) the full script is exported, as before.
Lengths: line_bound. Figures: docs/reduce.md ("Coexist scripts minimal by construction").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.report.standalone import _header

LIVING = "suites/coexist/test_living_together.py::"
CENSUS = "suites/coexist/test_census.py::"
BRIDGES = ("torchax", "torch_xla")
_FEATURE_ID = re.compile(rf"{re.escape(LIVING)}test_torch_feature_is_unchanged_by_importing\[(?P<bridge>torchax|torch_xla)-"
                         r"(?P<feature>[a-z]+)\]")
_ORDER_ID = re.compile(rf"{re.escape(LIVING)}test_import_order_gives_the_same_results\[(?P<bridge>torchax|torch_xla)\]")
_CENSUS_ID = re.compile(rf"{re.escape(CENSUS)}(?:(?P<test>test_bridge_uses_only_jax_apis_the_cell_has|"
                        r"test_bridge_has_no_silent_fallbacks)\[(?P<bridge>torchax|torch_xla)\]|"
                        r"(?P<ops>test_torchax_registers_only_torch_ops_the_cell_has))")
_DECLARED_ID = re.compile(r"suites/coexist/test_declared\.py::test_bridge_imports_only_what_it_declares\[(?P<bridge>torchax|torch_xla)\]")
# the bridge as the suite labels it (suites/coexist/census.py Bridge.label): `torchax 0.0.13`, `torch_xla 2.9.0`,
# or `torchax bundled in torch-xla 2.9.0`; only whether it is bundled is read (the version is the script's own)
_LABEL = r"(?P<module>torchax|torch_xla) (?:(?P<bundled>bundled in torch-xla) )?[0-9][0-9A-Za-z.+!-]*"
_NO_ANSWER = re.compile(r"a fresh process importing (?P<order>[a-z_]+(?:, [a-z_]+)*) exited [0-9]+ without its answer: ")
_DIFFERS = re.compile(rf"after `import (?P<bridge>torchax|torch_xla)` \({_LABEL}\), torch's (?P<feature>[a-z]+) "
                      r"differs from a fresh process without it:")
_ORDER_HEAD = re.compile(rf"{_LABEL}: importing jax first, then (?P<bridge>torchax|torch_xla), differs from (?P=bridge) first "
                         r"\(jax first -> (?P=bridge) first\):")
_CENSUS_HEAD = {"jax": re.compile(rf"{_LABEL} uses (?P<n>[0-9]+) jax API\(s\) that jax \S+ lacks:"),
                "fallbacks": re.compile(rf"{_LABEL} uses (?P<n>[0-9]+) API\(s\) this cell lacks inside try/except, "
                                        r"so it falls back without saying so:"),
                "torch-ops": re.compile(rf"{_LABEL} names (?P<n>[0-9]+) torch operator\(s\) that torch \S+ lacks:")}
_UNDECLARED_HEAD = re.compile(rf"{_LABEL}: importing it and calling its entry points needs (?P<n>[0-9]+) package\(s\) "
                              r"its metadata does not declare:")
# an undeclared package the bridge's module imported (installed), or failed to find in a step (not installed), and the
# bridge's extras that declare it where any does
_UNDECLARED = re.compile(r"  [a-z0-9][a-z0-9-]* \(imported by [A-Za-z_][A-Za-z0-9_.]*; installed: (?P<how>yes|no \((?P<step>"
                         r"import torchax|import torch_xla|entry points)\))(?P<extras>; declared only by its extra\(s\) "
                         r"[a-z0-9][a-z0-9-]*(?:, [a-z0-9][a-z0-9-]*)*)?\)")
_API = {"jax": r"jax(?:\.[A-Za-z_][A-Za-z0-9_]*)+", "fallbacks": r"jax(?:\.[A-Za-z_][A-Za-z0-9_]*)+",
        "torch-ops": r"torch\.ops\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*"}
_SITE = r"(?:torchax|torch_xla)(?:/[A-Za-z0-9_]+)+\.py:[0-9]{1,6}(?:, \+[0-9]{1,6} more)?"
_ENTRY = re.compile(rf"(?:^|; )(?P<api>[A-Za-z_][A-Za-z0-9_.]*) \((?P<site>{_SITE})\)")

# The probe's own functions its scenario facts call (suites/coexist/living.py; a test compares each with it)
_JAX = ("import jax", "import jax.numpy as jnp")  # each fact with the imports its expression uses (the probe's, once)
_ROUND_TRIP = ("def torchax_round_trip():", "    env = torchax.default_env()", "    with env:",
               "        t = torch.arange(6.0, device='jax').reshape(2, 3)",
               "        return torchax.interop.call_jax(jnp.sin, t).cpu().tolist()")
_CONVERSIONS = ("def torchax_conversions():", "    env = torchax.default_env()", "    out = {}", "    with env:",
                "        for dtype in ('float32', 'bfloat16', 'int64', 'bool'):",
                "            t = torch.tensor([1.5, -2.25, 0.0, 3.0]).to(getattr(torch, dtype)).to('jax')",
                "            back = t.cpu()", "            out[dtype] = [str(back.dtype), back.float().tolist()]",
                "    return out")
_JAX_JIT = ("def torchax_jax_jit():", "    env = torchax.default_env()", "    with env:",
            "        f = torchax.interop.jax_jit(lambda a, b: torch.relu(a @ b) + a.sum())",
            "        a = torch.arange(6.0, device='jax').reshape(2, 3) - 2",
            "        return f(a, torch.ones(3, 3, device='jax')).cpu().tolist()")
_GRAD = ("def torchax_grad_through_a_module():", "    torch.manual_seed(0)",
         "    weights, fn = torchax.extract_jax(torch.nn.Linear(3, 2))", "    x = jnp.arange(6.0).reshape(2, 3)",
         "    grads = jax.grad(lambda w: fn(w, (x,)).sum())(weights)",
         "    return {k: [float(v) for v in jnp.ravel(grads[k])] for k in sorted(grads)}")
_XLA_CALL_JAX = ("def xla_call_jax():", "    import torch_xla.core.xla_builder as xb", "    import torch_xla.core.xla_model as xm",
                 "    t = torch.arange(6.0).reshape(2, 3).to(xm.xla_device())",
                 "    return xb.call_jax(jnp.sin, (t,)).cpu().tolist()")
_XLA_STATICS = ("def xla_call_jax_statics_and_outputs():", "    import torch_xla.core.xla_builder as xb",
                "    import torch_xla.core.xla_model as xm", "    t = torch.arange(6.0).reshape(2, 3).to(xm.xla_device())",
                "    scaled = xb.call_jax(lambda x, unused, k, flag: jnp.where(flag, x * k, x), (t, t + 1, 3, True))",
                "    pair = xb.call_jax(lambda x: (jnp.sin(x), jnp.cos(x).sum()), (t,))",
                "    return {'scaled': scaled.cpu().tolist(), 'pair': [pair[0].cpu().tolist(), float(pair[1].cpu())]}")

# Each fact a living-together short script can compute: feature -> key -> (setup statements, the fact's
# expression). The expression is the probe's own (suites/coexist/living.py; tests/test_standalone_coexist.py
# finds each in it); torch.compile's facts through `compiled(fn, *args)` there, written out here. The rng
# facts are draws in sequence after one seed, so one alone is another draw: a script replays the group whole.
FACTS: dict[str, dict[str, tuple[tuple[str, ...], str]]] = {
    "compile": {
        "function of a tensor": ((), "torch.compile(lambda x: torch.sin(x) + 1)(torch.arange(4.0)).tolist()"),
        "function without tensor inputs": (("def no_tensor_inputs():", "    return torch.ones(3) * 2"),
                                           "torch.compile(no_tensor_inputs)().tolist()"),
        "module": (("torch.manual_seed(0)", "module = torch.nn.Linear(3, 2)"), "torch.compile(module)(torch.ones(3)).tolist()"),
    },
    "devices": {
        "torch.cuda.is_available()": ((), "torch.cuda.is_available()"),
        "torch.cuda.device_count()": ((), "torch.cuda.device_count()"),
        "torch.accelerator.is_available()": ((), "torch.accelerator.is_available()"),
        "torch.accelerator.current_accelerator()": ((), "str(torch.accelerator.current_accelerator())"),
        "torch.backends.mps.is_available()": ((), "torch.backends.mps.is_available()"),
        "torch.xpu.is_available()": ((), "torch.xpu.is_available()"),
        "privateuse1 backend name": ((), "torch._C._get_privateuse1_backend_name()"),
    },
    "defaults": {
        "torch.get_default_dtype()": ((), "str(torch.get_default_dtype())"),
        "torch.get_default_device()": ((), "str(torch.get_default_device())"),
        "torch.empty(1).device": ((), "str(torch.empty(1).device)"),
        "torch.tensor(1.0).dtype": ((), "str(torch.tensor(1.0).dtype)"),
        "torch.tensor(1).dtype": ((), "str(torch.tensor(1).dtype)"),
    },
    "dlpack": {
        "to_dlpack -> from_dlpack": ((), ("torch.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack("
                                         "torch.arange(6.0).reshape(2, 3))).tolist()")),
        "torch.from_dlpack(tensor)": ((), "torch.from_dlpack(torch.arange(3)).tolist()"),
    },
    "autocast": {
        "matmul under cpu bfloat16 autocast": (("def autocast_dtype():", "    with torch.autocast('cpu', dtype=torch.bfloat16):",
                                                "        return str((torch.ones(2, 2) @ torch.ones(2, 2)).dtype)"),
                                               "autocast_dtype()"),
        "autocast off outside": ((), "str((torch.ones(2, 2) @ torch.ones(2, 2)).dtype)"),
    },
    # draws in sequence after one seed: a script computes the whole group, in the probe's order (SEQUENCES)
    "rng": {
        "rand(4)": (("torch.manual_seed(1234)",), "torch.rand(4).tolist()"),
        "randn(3)": ((), "torch.randn(3).tolist()"),
        "randint(0, 100, (4,))": ((), "torch.randint(0, 100, (4,)).tolist()"),
        "randperm(5)": ((), "torch.randperm(5).tolist()"),
        "initial_seed()": ((), "torch.initial_seed()"),
    },
    # the groups test_import_order compares beside torch's (the probe records them where jax is imported)
    "jax": {
        "default_backend()": (_JAX[:1], "jax.default_backend()"),
        "device_count()": (_JAX[:1], "jax.device_count()"),
        "jax_enable_x64": (_JAX[:1], "bool(jax.config.jax_enable_x64)"),
        "jnp.arange(3).dtype": (_JAX, "str(jnp.arange(3).dtype)"),
        "jnp.sin(jnp.arange(4.0))": (_JAX, "[float(v) for v in jnp.sin(jnp.arange(4.0))]"),
    },
    "scenario": {
        "torchax: call_jax(jnp.sin) on a torchax tensor": ((_JAX[1], "import torchax.interop", *_ROUND_TRIP),
                                                           "torchax_round_trip()"),
        "torchax: conversions to jax and back per dtype": (("import torchax", *_CONVERSIONS), "torchax_conversions()"),
        "torchax: interop.jax_jit of a torch function": (("import torchax.interop", *_JAX_JIT), "torchax_jax_jit()"),
        "torchax: jax.grad through extract_jax(nn.Linear)": ((*_JAX, "import torchax", *_GRAD), "torchax_grad_through_a_module()"),
        "torch_xla: call_jax(jnp.sin) on an XLA tensor": ((_JAX[1], *_XLA_CALL_JAX), "xla_call_jax()"),
        "torch_xla: call_jax with statics, an unused argument, two outputs": ((_JAX[1], *_XLA_STATICS),
                                                                            "xla_call_jax_statics_and_outputs()"),
    },
}
FEATURES = ("compile", "devices", "defaults", "dlpack", "rng", "autocast")  # test_torch_feature_is_unchanged_by_importing's
SEQUENCES = ("rng",)  # groups computed whole where one of their facts is named: each fact is a draw after the others
# the groups test_import_order_gives_the_same_results compares, in the probe's order (torch.compile is the other case's)
ORDER_GROUPS = ("devices", "defaults", "dlpack", "rng", "autocast", "jax", "scenario")
MESSAGE_LINES = 6  # a run records its message's first lines only (harness/incell/plugin.py _MESSAGE_LINES)


@dataclass(frozen=True)
class Short:
    """What a failing coexist run's message says failed, each part checked (never its text)."""

    kind: str                           # "import", "feature", "order", "declared" or a census kind ("jax", "fallbacks", "torch-ops")
    bridge: str                         # torchax | torch_xla
    order: tuple[str, ...] = ()         # import: the modules the fresh process that failed imports, in order
    feature: str = ""                   # feature: the torch feature (a key of FACTS)
    keys: tuple[str, ...] = ()          # feature: the facts that differ (keys of FACTS[feature]); order: `GROUP: KEY`
    bundled: bool = False               # the bridge is the torchax torch-xla bundles (its label says so)
    uses: tuple[tuple[str, str], ...] = ()  # census: (API, site) as the message names them
    errors: bool = False                # feature, order: a differing fact was an error on one side (recorded as its root cause)
    missing: bool = False               # declared: a package not installed, or one the bridge's extras declare, is named

    @property
    def check(self) -> str:
        """The one check the script keeps (reduce.json's `by_construction`: `only its CHECK check`)."""
        return {"import": "bridge import", "feature": f"torch {self.feature} facts", "order": "import order facts",
                "declared": "undeclared packages"}.get(self.kind, f"{self.kind} census")


def short_form(case_id: str, message: str | None) -> Short | None:
    """The check a coexist case's short script keeps, read from the failing run's message by fixed
    patterns (None: the full script)."""
    text = message or ""
    first, _, rest = text.partition("\n")
    feature_id, order_id, census_id = (p.fullmatch(case_id or "") for p in (_FEATURE_ID, _ORDER_ID, _CENSUS_ID))
    if feature_id or order_id:
        bridge = (feature_id or order_id).group("bridge")  # type: ignore[union-attr]
        m = _NO_ANSWER.match(first)
        if m:
            order = tuple(m.group("order").split(", "))
            allowed = [(bridge, "jax"), ("torch",)] if feature_id else [("jax", bridge), (bridge, "jax")]
            return Short("import", bridge, order=order) if order in allowed else None
        if feature_id:
            d = _DIFFERS.fullmatch(first)
            feature = feature_id.group("feature")
            if not (d and d.group("bridge") == bridge == d.group("module") and d.group("feature") == feature in FEATURES):
                return None
            tables, bundled = {"": FACTS[feature]}, d.group("bundled")
        else:
            o = _ORDER_HEAD.fullmatch(first)
            if not (o and o.group("bridge") == bridge == o.group("module")):
                return None
            # the scenarios the probe runs for this bridge only (another bridge's would be facts it never recorded)
            tables = {f"{g}: ": {k: v for k, v in FACTS[g].items() if g != "scenario" or k.startswith(f"{bridge}: ")}
                      for g in ORDER_GROUPS}
            feature, bundled = "", o.group("bundled")
        keys, lines = [], rest.split("\n")
        for line in lines:
            key = next((f"{g}{k}" for g, table in tables.items() for k in table if line.startswith(f"  {g}{k}: ") and " -> " in line),
                       None)
            if key is None or key in keys or "'<not recorded>'" in line:  # both processes record the same facts
                return None
            keys.append(key)
        if len(keys) >= MESSAGE_LINES - 1 and sum(map(len, tables.values())) > len(keys):
            return None  # the run kept the message's first lines only: more facts may have differed
        errors = any(re.search(r"(?:^|: |-> )'error: ", line) for line in lines)
        return Short("feature" if feature_id else "order", bridge, feature=feature, keys=tuple(keys), bundled=bool(bundled),
                     errors=errors) if keys else None
    declared_id = _DECLARED_ID.fullmatch(case_id or "")
    if declared_id:
        bridge = declared_id.group("bridge")
        h = _UNDECLARED_HEAD.fullmatch(first)
        entries = rest.split("\n")
        found = [_UNDECLARED.fullmatch(e) for e in entries]
        if h is None or h.group("module") != bridge or len(entries) != int(h.group("n")) or len(entries) >= MESSAGE_LINES \
                or not all(found) or any(f.group("step") not in (None, "entry points", f"import {bridge}") for f in found):
            return None
        missing = any(f.group("how") != "yes" or f.group("extras") for f in found)
        return Short("declared", bridge, bundled=bool(h.group("bundled")), missing=missing)
    if census_id:
        kind = "torch-ops" if census_id.group("ops") else "jax" if "jax_apis" in census_id.group("test") else "fallbacks"
        bridge = census_id.group("bridge") or "torchax"
        h = _CENSUS_HEAD[kind].fullmatch(first)
        if h is None or h.group("module") != bridge or not rest.startswith("  ") or "\n" in rest:
            return None
        uses = tuple((e.group("api"), e.group("site")) for e in _ENTRY.finditer(rest[2:]))
        ok = all(re.fullmatch(_API[kind], api) and site.startswith(bridge + "/") for api, site in uses)
        if not uses or not ok or len(uses) != int(h.group("n")) or len({a for a, _ in uses}) != len(uses):
            return None
        return Short(kind, bridge, bundled=bool(h.group("bundled")), uses=uses)
    return None


def _label(short: Short) -> str:
    """The bridge's label as the suite words it (f-string text), its version read where the script runs."""
    if short.bundled:
        return "torchax bundled in torch-xla {version('torch-xla')}"
    return f"{short.bridge} {{version({'torch-xla' if short.bridge == 'torch_xla' else 'torchax'!r})}}"


_SUBPROCESS = ("proc = subprocess.run([sys.executable, '-c', inspect.getsource(probe) + f'\\nprobe({\",\".join(order)!r})\\n'],"
               " capture_output=True, text=True, env={**os.environ, 'TORCHINDUCTOR_COMPILE_THREADS': '1'}, cwd='/')")
# the suite's run_fresh (suites/coexist/fresh.py) where the bridge does not import: its failure statement
# word for word (the signature's statement), its message as the suite words it
_RUN_FRESH = [
    "def facts(*order):  # probe(order) in a fresh interpreter, as the suite runs it",
    f"    {_SUBPROCESS}",
    "    answers = [line for line in proc.stdout.splitlines() if line.startswith('SEAMS-ANSWER ')]",
    "    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]",
    "    what, cause = f\"importing {', '.join(order)}\", lines[-1] if lines else '(nothing on stderr)'",
    "    if proc.returncode or not answers:",
    ("        raise AssertionError(f'a fresh process {what} exited {proc.returncode} without its answer: {cause}\\n"
    "{proc.stderr.strip()[-1500:]}')"),
]
# where the bridge imports (the finding is a fact that differs): its answer
_FACTS = [
    "def facts(*order):  # probe(order) in a fresh interpreter, as the suite runs it; its answer",
    f"    {_SUBPROCESS}",
    "    assert proc.returncode == 0, f\"a fresh process importing {', '.join(order)} failed: {proc.stderr[-1500:]}\"",
    "    return json.loads(proc.stdout.splitlines()[-1].removeprefix('SEAMS-ANSWER '))",
]
_PROBE = ["def probe(order):", "    import importlib, json", "    for name in order.split(','):", "        importlib.import_module(name)"]


def _computed(short: Short) -> dict[str, tuple[tuple[str, ...], str]]:
    """The facts a living-together script computes, in the probe's order (a sequence's group whole), keyed as
    the suite's message keys them (`KEY`; in the import-order case `GROUP: KEY`)."""
    groups = ((short.feature, ""),) if short.kind == "feature" else ((g, f"{g}: ") for g in ORDER_GROUPS)
    return {f"{prefix}{k}": fact for g, prefix in groups for k, fact in FACTS[g].items()
            if f"{prefix}{k}" in short.keys or (g in SEQUENCES and any(key.startswith(prefix) for key in short.keys))}


def _setup(short: Short) -> list[str]:
    """The statements the computed facts need before them, in the probe's order: an import two facts need, once;
    a function's body whole."""
    setup: list[str] = []
    for line in (s for lines, _ in _computed(short).values() for s in lines):
        if line.startswith(" ") or line not in setup:
            setup.append(line)
    return setup


def _living(short: Short) -> list[str]:
    if short.kind == "import":
        return ["import inspect, os, subprocess, sys", "ENV", "", *[p.replace("importlib, json", "importlib") for p in _PROBE], "    print('SEAMS-ANSWER {}')", "",
                *_RUN_FRESH, "", f"facts(*{short.order!a})  # the order whose fresh process the run found failing"]
    table, setup = _computed(short), _setup(short)
    lines = ["import inspect, json, os, subprocess, sys", "ENV", "from importlib.metadata import version", "",
             *_PROBE, "    import torch", *(f"    {s}" for s in setup)]
    what = "only the facts the run found differing" + (" (a sequence whole)" if len(table) > len(short.keys) else "")
    if short.errors and len(table) == 1:  # the one fact, or the error it raised (its root cause, as the suite records it)
        key, expr = next(iter(table.items()))
        expr = expr[1]
        lines += ["    try:", f"        found = {{{key!a}: {expr}}}",
                  "    except Exception as exc:  # torch.compile wraps what failed: the root cause is the fact",
                  "        for _ in range(20):", "            exc = exc.__cause__ or exc.__context__ or exc",
                  f"        found = {{{key!a}: f\"error: {{type(exc).__name__}}: {{str(exc).splitlines()[0][:200] if str(exc) else ''}}\"}}",
                  "    print('SEAMS-ANSWER ' + json.dumps(found))"]
    elif short.errors:
        calls = ", ".join(f"{k!a}: lambda: {expr}" for k, (_, expr) in table.items())
        lines += ["    found = {}", f"    for key, fact in {{{calls}}}.items():  # {what}",
                  "        try:", "            found[key] = fact()",
                  "        except Exception as exc:  # the fact is its root cause, as the suite records it",
                  "            for _ in range(20):", "                exc = exc.__cause__ or exc.__context__ or exc",
                  "            found[key] = f\"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}\"",
                  "    print('SEAMS-ANSWER ' + json.dumps(found))"]
    else:  # values, no error: each fact as the probe computes it
        calls = ", ".join(f"{k!a}: {expr}" for k, (_, expr) in table.items())
        lines += [f"    print('SEAMS-ANSWER ' + json.dumps({{{calls}}}))  # {what}"]
    lines += ["", *_FACTS, ""]
    if short.kind == "order":  # the suite's message keys each fact `GROUP: KEY`, sorted as the groups then their keys are
        return lines + [
            f"jax_first, bridge_first = facts('jax', {short.bridge!r}), facts({short.bridge!r}, 'jax')",
            "diffs = [f'{key}: {jax_first[key]!r} -> {bridge_first[key]!r}' for key in sorted(jax_first) if jax_first[key] != bridge_first[key]]",
            (f"assert not diffs, (f\"{_label(short)}: importing jax first, then {short.bridge}, differs from {short.bridge} first"
             f" (jax first -> {short.bridge} first):\\n  \" + '\\n  '.join(diffs))")]
    return lines + [
        f"after, fresh = facts({short.bridge!r}, 'jax'), facts('torch')",
        "diffs = [f'{key}: {fresh[key]!r} -> {after[key]!r}' for key in sorted(fresh) if fresh[key] != after[key]]",
        (f"assert not diffs, (f\"after `import {short.bridge}` ({_label(short)}), torch's {short.feature} differs from a"
        " fresh process without it:\\n  \" + '\\n  '.join(diffs))")]


_LACKS = {
    "jax": [
        "def lacks(api):  # why this jax lacks `api` (None: it has it): part by part, a package's submodule imported, as the census",
        "    obj = importlib.import_module('jax')",
        "    for i, part in enumerate(api.split('.')[1:], 2):",
        "        try:",
        "            obj = getattr(obj, part)",
        "        except AttributeError as exc:",
        "            if not hasattr(obj, '__path__') or importlib.util.find_spec(sub := '.'.join(api.split('.')[:i])) is None:",
        "                return f'AttributeError: {exc}'",
        "            obj = importlib.import_module(sub)",
    ],
    "torch-ops": [
        "def lacks(api):  # why this torch lacks the operator overload `api` (None: it has it), as the census words it",
        "    import torch",
        "    ns, op, overload = api.split('.')[2:5]",
        "    packet = getattr(getattr(torch.ops, ns), op)",
        "    if overload not in packet.overloads() and not hasattr(type(packet), overload):",
        "        return f\"{ns}::{op} has no overload {overload!r} (it has {', '.join(sorted(packet.overloads())) or 'none'})\"",
    ],
}
_CENSUS_MESSAGE = {
    "jax": ("missing", "uses {len(missing)} jax API(s) that jax {version('jax')} lacks:"),
    "fallbacks": ("guarded", "uses {len(guarded)} API(s) this cell lacks inside try/except, so it falls back without saying so:"),
    "torch-ops": ("missing", "names {len(missing)} torch operator(s) that torch {version('torch')} lacks:"),
}


def _census(short: Short) -> list[str]:
    name, words = _CENSUS_MESSAGE[short.kind]
    what = "# the run's finding: each API the bridge uses that this cell lacked, and where"
    if len(short.uses) == 1:
        uses = [f"USES = {{{short.uses[0][0]!a}: {short.uses[0][1]!a}}}  {what}"]
    else:
        uses = [f"USES = {{  {what}", *(f"    {api!a}: {site!a}," for api, site in short.uses), "}"]
    return [
        "import importlib.util, os, re", "ENV", "from importlib.metadata import version",
        *uses, "", *_LACKS["torch-ops" if short.kind == "torch-ops" else "jax"], "",
        "def named(api, site):  # whether the bridge's file at `site` still names the API's last part",
        "    path = os.path.join(os.path.dirname(os.path.dirname(importlib.util.find_spec(site.split('/')[0]).origin)), site.split(':')[0])",
        "    return re.search(rf\"\\b{api.rsplit('.', 1)[-1]}\\b\", open(path).read()) is not None", "",
        f"{name} = [(api, site, why) for api, site in USES.items() if named(api, site) and (why := lacks(api)) is not None]",
        f"assert not {name}, (f\"{_label(short)} {words}\\n  \" + '; '.join(",
        f"    f\"{{api}} ({{site}}){{'' if why.startswith('AttributeError: module') else ': ' + why[:120]}}\" for api, site, why in {name}))",
    ]


# suites/coexist/declared.py's import_probe, its entry points per bridge
_ENTRY_POINTS = {
    "torchax": ["import torch, torchax, torchax.interop", "env = torchax.default_env()", "torchax.extract_jax(torch.nn.Linear(2, 2))",
                "with env:", "    t = torch.ones(2, device='jax')", "    import jax.numpy as jnp", "",
                "    torchax.interop.call_jax(jnp.sin, t)", "    torchax.interop.jax_jit(lambda x: x + 1)(t)"],
    "torch_xla": ["import torch", "import torch_xla.core.xla_model as xm", "", "t = torch.ones(2).to(xm.xla_device())",
                  "xm.mark_step()", "import torch_xla.core.xla_builder as xb", "",
                  "if hasattr(xb, 'call_jax'):  # 2.7+: where torch_xla reaches for jax (and torchax)",
                  "    import jax.numpy as jnp", "", "    xb.call_jax(jnp.sin, (t,)).cpu()"],
}


def _declared(short: Short) -> list[str]:
    dist = "torch-xla" if short.bundled or short.bridge == "torch_xla" else "torchax"
    entry = [f"        {line}" if line else line for line in _ENTRY_POINTS[short.bridge] if line]
    if short.missing:  # the suite's steps: a package missing is the first ModuleNotFoundError of a step's failure, with its file
        steps = [
            "", "    def step(what, fn):  # a step's failure: a package missing where a ModuleNotFoundError is in its chain",
            "        try:", "            return fn() or True", "        except Exception as exc:", "            for _ in range(20):",
            "                if isinstance(exc, ModuleNotFoundError) and exc.name:",
            "                    raiser = [f.filename for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith('<frozen')]",
            "                    return missing.append([exc.name.split('.')[0], what, raiser[-1] if raiser else '?'])",
            "                exc = exc.__cause__ or exc.__context__ or exc", "",
            "    def entry_points():", *entry,
            "    if step(f'import {bridge}', lambda: __import__(bridge)):", "        step('entry points', entry_points)",
            "    print('SEAMS-ANSWER ' + json.dumps([first, missing]))"]
    else:
        steps = ["    try:", "        __import__(bridge)", *entry,
                 "    except Exception:  # a step that fails is not this finding: what it imported by then is",
                 "        pass",
                 "    print('SEAMS-ANSWER ' + json.dumps(first))"]
    # a package a module of the bridge failed to find (the suite's _module_of: the file's path from the bridge's own folder)
    absent = [
        "for top, step, path in missing:",
        "    parts = path.replace('\\\\', '/').split('/')",
        ("    module = next(('.'.join(parts[i:]).removesuffix('.py').removesuffix('.__init__') for i, part in enumerate(parts)"
         " if part in own and i + 1 < len(parts)), None)"),
        "    if module and top not in sys.stdlib_module_names and top not in own and norm(top) not in reach and norm(top) not in found:",
        "        found[norm(top)] = (module, f'no ({step})')",
        f"extras = {{p: ', '.join(sorted({{of for q, _, of in requires({dist!r}) or [] if of and q == p}})) for p in found}}  # that declare it",
        ] if short.missing else []
    annotate = "' + (f'; declared only by its extra(s) {extras[p]}' if extras[p] else '') + ')'" if short.missing else ")'"
    return [
        "import inspect, json, os, re, subprocess, sys", "ENV",
        "from importlib.metadata import PackageNotFoundError, distribution, packages_distributions, version", "",
        "def probe(bridge):  # in a fresh interpreter: import the bridge, call its entry points; who first imported each package",
        *(["    import json, sys, traceback", "    first, missing = {}, []"] if short.missing else ["    import json, sys", "    first = {}"]), "",
        "    class Recorder:  # the suite's import hook: a top-level package's first importer, importlib's frames skipped",
        "        def find_spec(self, name, path=None, target=None):",
        "            frame = sys._getframe(1)",
        ("            while frame is not None and (frame.f_globals.get('__name__', '').startswith('importlib')"
        " or frame.f_code.co_filename.startswith('<frozen')):"),
        "                frame = frame.f_back",
        "            if name.split('.')[0] not in first and name.split('.')[0] not in sys.modules:",
        "                first[name.split('.')[0]] = frame.f_globals.get('__name__', '') if frame is not None else '?'",
        "    sys.meta_path.insert(0, Recorder())", *steps, "",
        "def norm(text):", "    return re.sub(r'[-_.]+', '-', text).lower()", "",
        "def requires(name):  # (package, extras it asks for, the extra of `name` it belongs to) per Requires-Dist of an installed dist",
        "    try:", "        reqs = distribution(name).requires or []", "    except PackageNotFoundError:",
        "        return None  # not installed",
        ("    found = [(re.match(r'\\s*([A-Za-z0-9][A-Za-z0-9._-]*)\\s*(?:\\[([^\\]]*)\\])?', r),"
        " re.search(r\"extra\\s*==\\s*['\\\"]([^'\\\"]+)['\\\"]\", r.partition(';')[2])) for r in reqs]"),
        ("    return [(norm(m.group(1)), [norm(x) for x in (m.group(2) or '').split(',') if x.strip()], norm(e.group(1)) if e else None)"
        " for m, e in found if m]"), "",
        "def declared(root):  # what root's Requires-Dist reaches: base requirements, extras asked for, root's own extras held whole",
        "    reqs = requires(root) or []",
        "    chosen = {e for _, _, e in reqs if e and all(requires(p) is not None for p, _, x in reqs if x == e)}",
        "    seen, todo = set(), [(root, '')]",
        "    while todo:",
        "        name, extra = todo.pop()",
        "        if (name, extra) not in seen:",
        "            seen.add((name, extra))",
        "            for pkg, asked, of in requires(name) or []:",
        "                if (of == extra) if extra else (of is None or (name == root and of in chosen)):",
        "                    todo += [(pkg, ''), *((pkg, x) for x in asked)]",
        "    return {name for name, _ in seen}", "",
        (f"proc = subprocess.run([sys.executable, '-c', inspect.getsource(probe) + {chr(10) + 'probe(' + repr(short.bridge) + ')' + chr(10)!a}],"
        " capture_output=True, text=True, cwd='/')"),
        f"{'first, missing' if short.missing else 'first'} = json.loads(proc.stdout.splitlines()[-1].removeprefix('SEAMS-ANSWER '))",
        f"reach, tops = declared({dist!r}), packages_distributions()",
        f"own = {{top for top, dists in tops.items() if {dist!r} in map(norm, dists)}}",
        ("found = {norm(tops[top][0]): (by, 'yes') for top, by in sorted(first.items()) if top not in sys.stdlib_module_names"
        " and top not in own and by.split('.')[0] in own and tops.get(top) and not {norm(d) for d in tops[top]} & reach}"),
        *absent,
        (f"assert not found, (f\"{_label(short)}: importing it and calling its entry points needs {{len(found)}} package(s) its"
        " metadata does not declare:\\n  \" + '\\n  '.join(f'{p} (imported by {by}; installed: {how}"
        f"{annotate} for p, (by, how) in sorted(found.items())))"),
    ]


MAX_LINES = 30  # issue 32's bound for every reduced script


def line_bound(short: Short) -> int:
    """The short script's length bound: issue 32's 30 lines, and where it cannot be, named: a census script
    lists each API of the run's finding on a line of its own (beyond the first, with the dict's two braces:
    30 lines for 2 APIs, 34 for the pallas kernels' 6, 49 for torch 2.13's 21 named-tensor overloads); a
    torch fact that raised keeps its root cause (torch.compile wraps what failed, and the known issue's
    match reads the root error: 5 lines, 8 where several facts are computed, in a loop); a living-together
    script keeps the statements its facts need beyond 3 lines, whole (a scenario's function of the probe,
    4-9 lines each; the imports it uses); a declared-dependency script keeps the suite's import hook with
    the bridge's entry points (a fresh interpreter) and the Requires-Dist closure with the bridge's own
    extras (what "declared" means): 65, and where a package was not installed or only an extra declares it,
    the suite's steps (a ModuleNotFoundError in a step's chain, the file that raised it), the module that
    file is and the extras that declare it: 81. (3 lines less each since the header became one comment
    line and two of literals: the first 3 lines of what a script adds fit in 30.)"""
    if short.kind == "declared":
        return 81 if short.missing else 65
    if len(short.uses) > 1:
        return MAX_LINES + len(short.uses) - 2
    if short.kind in ("feature", "order"):
        errors = (5 if len(_computed(short)) == 1 else 8) if short.errors else 0
        return MAX_LINES + max(0, errors + max(0, len(_setup(short)) - 3) - 3)
    return MAX_LINES


def export_coexist_script(case_id: str, cell: Mapping[str, Any], expectation: Mapping[str, Any] | None,
                          short: Short) -> str:
    """The short script of one failing coexist case (see the module docstring)."""
    lines = _header(case_id, cell, expectation)
    body = (_living(short) if short.kind in ("import", "feature", "order") else _declared(short) if short.kind == "declared"
            else _census(short))
    lines += [line for line in body if line != "ENV"]
    lines += [f"print({'no failure: ' + case_id.rsplit('::', 1)[-1] + ' behaves as the suite expects'!r})", ""]
    return "\n".join(lines)
