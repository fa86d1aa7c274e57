"""examples/first_look.ipynb runs top to bottom in a real kernel (nbclient, Debian python3-nbclient and
python3-ipykernel) on the cpu backend, and its saved outputs would show something useful without the widget."""
import os

import pytest

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "first_look.ipynb")


def test_first_look_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat (Debian python3-nbformat)")
    nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient (Debian python3-nbclient)")
    pytest.importorskip("ipykernel", reason="the notebook test needs a Python kernel (Debian python3-ipykernel)")
    monkeypatch.setenv("QGPU_BACKEND", "cpu")
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        pytest.fail(f"the notebook failed: {e}")
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    rich = [o["data"] for o in outputs if o.get("output_type") == "execute_result"]
    html = [d["text/html"] for d in rich if "text/html" in d]
    assert any("quantem.gpu Dataset" in h and "scan 32 x 32, detector 64 x 64" in h for h in html)
    assert any("<td>keV</td>" in h for h in html)  # ds.calibration
    assert sum("image/png" in d for d in rich) >= 4  # the dataset, BF, iDPC, mean pattern
    assert any("detector.bf: 32 x 32 uint64 on cpu" in h for h in html)
    widget_view = any("application/vnd.jupyter.widget-view+json" in d for d in rich)
    assert widget_view or any("pip install anywidget" in h and "quantem.gpu Dataset" in h for h in html)
