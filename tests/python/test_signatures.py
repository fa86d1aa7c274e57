"""Discoverability: every public function of quantem.gpu has a real signature (named parameters, no bare
*args / **kwargs) and a docstring naming each parameter; unknown keywords are named with the valid ones."""
import inspect

import numpy as np
import pytest

import quantem.gpu as qgpu

MODULES = [qgpu.io, qgpu.detector, qgpu.dpc, qgpu.display, qgpu.ssb, qgpu.parallax, qgpu.movie, qgpu.cache,
           qgpu.device]


def public_functions():
    out = []
    for mod in MODULES:
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        for name in names:
            obj = getattr(mod, name)
            if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
                continue
            # the module's own functions and the compiled ones it re-exports, not helpers imported for its use
            if getattr(obj, "__module__", "") not in (mod.__name__, "quantem.gpu._qgpu") and name not in getattr(
                    mod, "__all__", ()):
                continue
            out.append(pytest.param(obj, id=f"{mod.__name__.rsplit('.', 1)[-1]}.{name}"))
    for cls in (qgpu.Dataset, qgpu.cache.ProductCache):  # the public methods of the classes a user holds
        for name, obj in vars(cls).items():
            if not name.startswith("_") and callable(obj) and not inspect.isclass(obj):
                out.append(pytest.param(obj, id=f"{cls.__name__}.{name}"))
    return out


FUNCTIONS = public_functions()


def test_the_walk_finds_the_functions():
    ids = {p.id for p in FUNCTIONS}
    for expected in ("io.load", "io.inspect", "ssb.reconstruct", "parallax.run", "movie.render", "display.render",
                     "detector.bf", "dpc.pipeline", "cache.build", "device.detect", "Dataset.read",
                     "ProductCache.detector"):
        assert expected in ids
    assert len(ids) > 45


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_real_signature(fn):
    sig = inspect.signature(fn)  # raises ValueError for a bare pybind11 builtin
    kinds = {p.kind for p in sig.parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds, f"{fn.__name__}{sig}: **kwargs hides the parameters"
    assert inspect.Parameter.VAR_POSITIONAL not in kinds, f"{fn.__name__}{sig}: *args hides the parameters"


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_docstring_names_every_parameter(fn):
    doc = inspect.getdoc(fn) or ""
    first = doc.split("\n", 1)[0]
    assert doc and not first.startswith(fn.__name__ + "("), f"{fn.__name__}: only pybind11's signature as its doc"
    missing = [p for p in inspect.signature(fn).parameters if p != "self" and p not in doc]
    assert not missing, f"{fn.__name__}: the docstring does not mention {missing}"


def test_load_signature_lists_its_parameters():
    params = inspect.signature(qgpu.io.load).parameters
    assert list(params)[:3] == ["path", "backend", "dataset"]
    assert params["backend"].default == "auto"
    assert params["bin_scan"].default == 1
    assert params["progress"].default is None
    assert "progress(fraction)" in qgpu.io.load.__doc__


def test_load_unknown_keyword_names_it_and_the_valid_ones(sample_path):
    with pytest.raises(TypeError) as e:
        qgpu.io.load(sample_path, bakend="cpu")
    message = str(e.value)
    assert "'bakend'" in message and "backend" in message and "scan_region" in message
    assert "incompatible function arguments" not in message
    assert isinstance(e.value, qgpu.InvalidArgument)


def test_ssb_reconstruct_lists_its_parameters(sample_path):
    params = inspect.signature(qgpu.ssb.reconstruct).parameters
    for name in ("energy", "semiangle", "step", "mrad_per_pixel", "rotation", "transpose", "defocus", "C1", "A1",
                 "A1_angle", "C3", "disk_center", "disk_radius", "weighting"):
        assert params[name].kind == inspect.Parameter.KEYWORD_ONLY and params[name].default is None
    ds = qgpu.io.load(sample_path, backend="cpu")
    with pytest.raises(TypeError, match=r"unknown parameter 'energi' \(it takes ds, energy, semiangle"):
        qgpu.ssb.reconstruct(ds, energi=300)
    # the keywords still reach the reconstruction: a bad value is refused by the core, naming it
    with pytest.raises(qgpu.InvalidArgument, match="energy"):
        qgpu.ssb.reconstruct(ds, energy=-1.0)


def test_parallax_and_movie_list_their_parameters():
    assert "upsample" in inspect.signature(qgpu.parallax.run).parameters
    assert "fps" in inspect.signature(qgpu.movie.render).parameters
    with pytest.raises(TypeError, match="unknown parameter 'fsp'.*fps"):
        qgpu.movie.render(None, "x.gif", fsp=3)


def test_warnings_point_at_the_callers_line(sample_path):
    ds = qgpu.io.load(sample_path, backend="cpu")  # in focus: the parallax fit sees no parallax
    with pytest.warns(qgpu.parallax.ParallaxUndetermined) as caught:
        qgpu.parallax.fit(ds)
    assert caught[0].filename == __file__  # not the keyword-checking wrapper's
