"""Typed errors for arguments the compiled core cannot take.

pybind11 answers a call whose arguments do not convert with a TypeError that dumps every overload's signature
("incompatible function arguments"), and an allocation that fails with a bare MemoryError("std::bad_alloc").
guard() wraps each function and method of _qgpu so that the first becomes ArgumentTypeError (an InvalidArgument
and a TypeError) naming the argument, what it must be and what it got, and the second OutOfMemory naming the
call and its numeric arguments. Nothing changes for calls that succeed or raise anything else.
"""
import ast
import functools
import inspect
import numbers
import os
import re

import numpy as np


def _split_top(text, sep=","):
    """Splits at `sep` outside brackets and quotes."""
    out, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


# pybind11 3 writes argument types as typing protocols, abstract collections and `A | B` unions; these are read as
# the pybind11 2 names the rest of this module knows.
_ALIASES = {"typing.SupportsInt": "int", "typing.SupportsIndex": "int", "typing.SupportsFloat": "float",
            "collections.abc.Sequence": "List", "typing.Sequence": "List", "typing.List": "List", "list": "List",
            "tuple": "Tuple", "typing.Tuple": "Tuple", "typing.Optional": "Optional", "typing.Union": "Union",
            "typing.Any": "object", "collections.abc.Callable": "Callable", "typing.Callable": "Callable",
            "typing.Dict": "dict", "Dict": "dict", "numpy.typing.NDArray": "numpy.ndarray"}


def _normalise(t):
    """A pybind11 3 type text in pybind11 2 words: 'typing.SupportsInt | typing.SupportsIndex' -> 'int',
    'os.PathLike | str | bytes' -> 'os.PathLike', 'X | None' -> 'Optional[X]',
    'collections.abc.Sequence[...]' -> 'List[...]'. pybind11 2 texts come back unchanged."""
    t = t.strip()
    parts = _split_top(t, "|")
    if len(parts) > 1:
        rest = []
        for p in (_normalise(p) for p in parts):
            if p != "None" and p not in rest:
                rest.append(p)
        if set(rest) == {"float", "int"}:
            core = "float"
        elif "os.PathLike" in rest and set(rest) <= {"os.PathLike", "str", "bytes"}:
            core = "os.PathLike"
        elif len(rest) == 1:
            core = rest[0]
        else:
            core = "Union[" + ", ".join(rest) + "]"
        return f"Optional[{core}]" if "None" in [p.strip() for p in parts] else core
    head, args = _generic(t)
    head = _ALIASES.get(head, head)
    return head + "[" + ", ".join(_normalise(a) for a in args) + "]" if args else head


def _signature(doc, name):
    """[(param, type, has_default, default_text)] of the first overload in a pybind11 docstring, or None."""
    first = (doc or "").lstrip().split("\n", 1)[0]
    m = re.match(r"^\s*" + re.escape(name) + r"\((.*)\)\s*->", first) or re.match(r"^\s*\S+?\((.*)\)\s*->", first)
    if not m:
        return None
    params = []
    for part in _split_top(m.group(1)):
        if part in ("*", "/") or part.startswith("*"):
            continue
        pname, _, rest = part.partition(":")
        ptype, eq, default = rest.partition("=")
        params.append((pname.strip(), _normalise(ptype), bool(eq), default.strip()))
    return params


def _generic(t):
    """'List[int]' -> ('List', ['int']); 'int' -> ('int', [])."""
    m = re.match(r"^([\w.]+)\[(.*)\]$", t)
    if not m:
        return t, []
    return m.group(1), _split_top(m.group(2))


def _fits(value, t, classes):
    """False only when `value` certainly cannot convert to the pybind11 type text `t`."""
    head, args = _generic(t)
    if head == "Optional":
        return value is None or _fits(value, args[0], classes)
    if head == "Union":
        return any(_fits(value, a, classes) for a in args)
    if value is None:
        return head in ("object", "None")
    if head == "os.PathLike":
        return isinstance(value, (str, bytes, os.PathLike)) and "\0" not in os.fsdecode(value)
    if head == "str":
        return isinstance(value, (str, bytes))
    if head == "bool":
        return isinstance(value, (bool, np.bool_, numbers.Number))
    if head == "int":
        return isinstance(value, numbers.Integral) or (hasattr(value, "__index__") and not isinstance(value, float))
    if head == "float":
        return isinstance(value, numbers.Real) or hasattr(value, "__float__") or hasattr(value, "__index__")
    if head in ("List", "Sequence", "Tuple"):
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
            return False
        items = list(value)
        if head == "Tuple":
            return len(items) == len(args) and all(_fits(v, a, classes) for v, a in zip(items, args))
        return all(_fits(v, args[0], classes) for v in items) if args else True
    if head in ("dict", "Dict"):
        return isinstance(value, dict)
    if head in ("Callable", "function"):
        return callable(value)
    cls = classes.get(head.rsplit(".", 1)[-1])
    if cls is not None and "quantem" in head:
        return isinstance(value, cls)
    return True  # numpy arrays, object, ...: not decidable here


def _int_range_problem(value, t):
    """A text when an integer cannot fit the C++ integer behind 'int' (negative for a size, or too large)."""
    head, args = _generic(t)
    if head == "Optional":
        return None if value is None else _int_range_problem(value, args[0])
    if head == "int" and isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < 0:
            return "a non-negative integer"
        if value >= 2**63:
            return "an integer below 2^63"
    if head in ("List", "Tuple") and hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
        inner = args if head == "Tuple" else args * len(list(value)) if args else []
        for v, a in zip(value, inner):
            p = _int_range_problem(v, a)
            if p:
                return p + " in each element"
    return None


def _describe(t):
    head, args = _generic(t)
    names = {"os.PathLike": "a path (str or os.PathLike such as pathlib.Path)", "str": "a string", "int": "an integer",
             "float": "a number", "bool": "a bool", "dict": "a dict", "object": "any object"}
    if head == "Optional":
        return _describe(args[0]) + " or None"
    if head == "List":
        if not args:
            return "a sequence"
        return "a sequence of " + re.sub(r"^an? ", "", _describe(args[0])) + "s"
    if head == "Tuple":
        return "a tuple of " + str(len(args)) + " (" + ", ".join(_describe(a) for a in args) + ")"
    if head.startswith("numpy.ndarray"):
        return "a numpy array (" + t + ")"
    return names.get(head, head.rsplit(".", 1)[-1])


def _short(value):
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _diagnose(fname, doc, args, kwargs, classes):
    """The message naming the argument that does not fit, or a general one."""
    sig = _signature(doc, fname)
    if sig is None:
        return f"{fname}: the arguments do not match its signature"
    names = [p[0] for p in sig]
    bound = {}
    if len(args) > len(sig):
        return f"{fname}: takes at most {len(sig)} positional arguments ({', '.join(names)}), got {len(args)}"
    for p, v in zip(sig, args):
        bound[p[0]] = v
    for k, v in kwargs.items():
        if k not in names:
            return f"{fname}: unexpected keyword argument '{k}' (it takes {', '.join(names)})"
        if k in bound:
            return f"{fname}: argument '{k}' given twice"
        bound[k] = v
    for pname, ptype, has_default, default in sig:
        if pname not in bound:
            if not has_default:
                return f"{fname}: missing argument '{pname}' ({_describe(ptype)})"
            continue
        v = bound[pname]
        if v is None and default == "None":
            continue
        if not _fits(v, ptype, classes):
            return f"{fname}: argument '{pname}' must be {_describe(ptype)}, got {_short(v)}"
    for pname, ptype, _, _ in sig:
        if pname in bound:
            problem = _int_range_problem(bound[pname], ptype)
            if problem:
                return f"{fname}: argument '{pname}' must be {problem}, got {_short(bound[pname])}"
    got = ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])
    return f"{fname}: the arguments ({got}) do not match ({', '.join(p[0] + ': ' + p[1] for p in sig)})"


def _numeric_args(args, kwargs, doc, fname):
    sig = _signature(doc, fname) or []
    named = list(zip([p[0] for p in sig], args)) + list(kwargs.items())
    shown = []
    for k, v in named:
        numbers_only = isinstance(v, (list, tuple)) and all(isinstance(x, numbers.Number) for x in v)
        if isinstance(v, numbers.Number) or numbers_only:
            shown.append(f"{k}={v!r}")
    return ", ".join(shown)


class _Default:
    """A default shown as pybind11 prints it (a value Python cannot rebuild, e.g. a C++ object)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _python_default(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _Default(text)


def python_signature(doc, fname):
    """inspect.Signature of the first overload in a pybind11 docstring (names and defaults), or None."""
    sig = _signature(doc, fname)
    if sig is None:
        return None
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=_python_default(default) if has_default else inspect.Parameter.empty)
              for name, _, has_default, default in sig]
    # pybind11 allows a required argument after defaulted ones (e.g. `backend`); Python's check would refuse it.
    return inspect.Signature(params, __validate_parameters__=False)


# Set by install(): the error raised for a keyword argument a function does not take.
ERROR_TYPE = TypeError


def keywords(fn):
    """fn, raising ERROR_TYPE (an InvalidArgument and a TypeError) that names an unknown keyword argument and lists
    the ones fn takes, instead of Python's bare "unexpected keyword argument"."""
    sig = inspect.signature(fn)
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return fn
    names = [n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    qualname = fn.__module__.replace("quantem.gpu.", "qgpu.") + "." + fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for k in kwargs:
            if k not in names:
                raise ERROR_TYPE(f"{qualname}: unknown parameter '{k}' (it takes {', '.join(names)})")
        from .rich import attach_pixel_size  # results of a Dataset learn their pixel size (scale bars)
        return attach_pixel_size(fn(*args, **kwargs), args, kwargs)

    return call


def document(fn, doc):
    """Gives a compiled function (guarded by install) its docstring; returns fn."""
    fn.__doc__ = doc
    return fn


def guard(fn, fname, classes, error_type, oom_type):
    """fn wrapped: pybind11's argument TypeError -> error_type naming the argument; std::bad_alloc -> oom_type."""
    doc = getattr(fn, "__doc__", "") or ""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if "incompatible function arguments" not in str(e):
                raise
            message = _diagnose(fname, doc, args, kwargs, classes)
        except MemoryError as e:
            if type(e) is not MemoryError or "bad_alloc" not in str(e):
                raise
            numeric = _numeric_args(args, kwargs, doc, fname)
            message = (f"{fname}: host memory ran out (std::bad_alloc)" +
                       (f" for {numeric}: an argument asks for more memory than this machine has" if numeric else ""))
            raise oom_type(message) from None
        raise error_type(message) from None

    call.__signature__ = python_signature(doc, fname)
    if call.__signature__ is None:
        del call.__signature__
    return call


def install(module, error_type, oom_type):
    """Wraps every function of the compiled module and every method of its classes, in place."""
    global ERROR_TYPE
    ERROR_TYPE = error_type
    builtin = type(len)
    classes = {n: c for n, c in vars(module).items() if isinstance(c, type)}
    for name, obj in list(vars(module).items()):
        if isinstance(obj, builtin) and not name.startswith("_"):
            setattr(module, name, guard(obj, name, classes, error_type, oom_type))
    method_type = type(module.Dataset.read)
    for cname, cls in classes.items():
        if issubclass(cls, BaseException):
            continue
        for name, obj in list(vars(cls).items()):
            if isinstance(obj, method_type) and not name.startswith("__"):
                setattr(cls, name, guard(obj, name, classes, error_type, oom_type))
