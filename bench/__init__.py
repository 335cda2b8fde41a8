"""dsview's benchmarks as one package: experiments declared once
(bench/experiments/), run by one runner (harness.py) that owns rounds,
medians, cold starts, mounts and the JSON results, and drawn by report.py.

  python3 -m bench list
  python3 -m bench run NAME [--quick] [--rounds N] [--key value ...]
  python3 -m bench report [RESULT.json ...]

benchlib.py is the toolbox the experiments measure with."""
