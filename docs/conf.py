"""Sphinx configuration of the documentation: Markdown pages (MyST) and the Python API
reference generated from the docstrings, one page per module and per public name (as
PyFlink's). `dev/docs` builds it with warnings as errors."""
import importlib
import inspect
import os
import pkgutil
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import spark_checkpoint_storage  # noqa: E402

project = "spark-checkpoint-storage"
author = "spark-checkpoint-storage contributors"
release = version = spark_checkpoint_storage.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.autosummary",
              "sphinx.ext.intersphinx", "sphinx.ext.viewcode"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_templates"]
templates_path = ["_templates"]
html_theme = "furo"
html_title = "spark-checkpoint-storage %s" % release

# Links between pages must resolve, headings get anchors for "page.md#heading" links.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings = []
nitpicky = True
# Names the docstrings mention that no inventory documents: py4j's and the JVM's.
nitpick_ignore_regex = [
    ("py:class", r"py4j\..*"),
    ("py:class", r"pyspark\..*"),
    ("py:class", r"pyarrow\..*"),
    ("py:class", r"pandas\..*"),
    ("py:class", r"(io\.sparkcheckpointstorage|org\.apache|java)\..*"),
    ("py:class", r"(.*\.)?F"),
    ("py:class", r"enum\..*"),
    ("py:meth", r"PySparkException\..*"),
    # The type variable of the result classes' from_json (each returns its own class).
    ("py:class", r"spark_checkpoint_storage\.results\._R"),
]

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True,
                           "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_class_signature = "separated"
intersphinx_mapping = {"python": ("https://docs.python.org/3", None)}
intersphinx_disabled_reftypes = ["*"]
intersphinx_timeout = 5
# Offline builds (CI, a clean clone without network) must not depend on inventories.
if os.environ.get("SCS_DOCS_OFFLINE", "1") == "1":
    intersphinx_mapping = {}

#: The modules of the API reference, the most used first; every other module of the package
#: follows in name order (a new module is documented without being listed here). Every public
#: name of each (``__all__``) gets a page and must carry a docstring (with an example: see
#: below).
_FIRST = ["checkpoint_storage", "checkpoint_config", "session", "state_backend", "java_gateway",
          "savepoints", "inspection", "migration", "results", "errors"]
#: Not API: the command line's jobs (documented as commands) and private modules.
_NOT_API = {"__main__", "demo"}
API_MODULES = _FIRST + sorted(
    m.name for m in pkgutil.iter_modules(spark_checkpoint_storage.__path__)
    if m.name not in _FIRST and m.name not in _NOT_API and not m.name.startswith("_"))


def _public_members(cls):
    """The public methods and properties a class defines itself (not inherited ones)."""
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (property, classmethod, staticmethod)) or inspect.isfunction(value):
            yield name, value


def _has_example(doc: str) -> bool:
    return ">>>" in doc


def undocumented_public_names():
    """Every public name of the API modules without a docstring, and every public function
    and (non-exception) class whose docstring has no ``>>>`` example: the build fails on
    them, so that a name added without documentation cannot reach a release."""
    problems = []
    for short in API_MODULES:
        module = importlib.import_module("spark_checkpoint_storage." + short)
        if not inspect.getdoc(module):
            problems.append("module %s has no docstring" % module.__name__)
        for name in getattr(module, "__all__", None) or []:
            obj = getattr(module, name)
            qualified = "%s.%s" % (module.__name__, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants: documented by their "#:" comments, checked by autodoc
            doc = inspect.getdoc(obj) or ""
            if not doc:
                problems.append("%s has no docstring" % qualified)
            elif not (inspect.isclass(obj) and issubclass(obj, BaseException)) \
                    and not _has_example(doc):
                problems.append("%s has no example (>>>) in its docstring" % qualified)
            if inspect.isclass(obj):
                for member, value in _public_members(obj):
                    target = value.fget if isinstance(value, property) else \
                        getattr(value, "__func__", value)
                    if not inspect.getdoc(target):
                        problems.append("%s.%s has no docstring" % (qualified, member))
    return problems


def _write_api_pages():
    """docs/api/: an index, and a page per module listing its public names, each of which
    autosummary gives a page of its own. Written when this file is read, before Sphinx
    looks for the pages of the project."""
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api")
    # Everything under api/ is generated: pages of removed modules or names go with them.
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    pages = {"index.rst": "\n".join([
        "Python API reference", "=" * 20, "",
        "The modules of :mod:`spark_checkpoint_storage`; the package itself re-exports the",
        "names most sessions need (``from spark_checkpoint_storage import",
        "FileSystemCheckpointStorage, configure_spark_with_checkpoint_storage``).", "",
        ".. toctree::", "   :maxdepth: 1", "",
        "   spark_checkpoint_storage",
    ] + ["   spark_checkpoint_storage.%s" % m for m in API_MODULES]) + "\n"}
    package = spark_checkpoint_storage
    pages["spark_checkpoint_storage.rst"] = "\n".join([
        "spark_checkpoint_storage", "=" * 24, "",
        ".. automodule:: spark_checkpoint_storage", "   :no-members:", "",
        "Names importable from the package itself:", "",
    ] + ["* :py:obj:`%s <%s.%s>`" % (n, getattr(package, n).__module__, n)
         if hasattr(getattr(package, n), "__module__") and not isinstance(getattr(package, n), str)
         else "* ``%s``: the package version (``%s``)" % (n, getattr(package, n))
         for n in package.__all__]) + "\n"
    for short in API_MODULES:
        name = "spark_checkpoint_storage." + short
        module = importlib.import_module(name)
        names = list(module.__all__)
        lines = [name, "=" * len(name), "", ".. automodule:: %s" % name, "   :no-members:", "",
                 ".. currentmodule:: %s" % name, "",
                 ".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
        lines += ["   " + n for n in names]
        pages[name + ".rst"] = "\n".join(lines) + "\n"
    for filename, text in pages.items():
        path = os.path.join(out, filename)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w") as f:
                f.write(text)


def _check_docstrings(app):
    problems = undocumented_public_names()
    if problems:
        raise RuntimeError("Public names without documentation:\n  " + "\n  ".join(problems))


_write_api_pages()


def setup(app):
    app.connect("builder-inited", _check_docstrings)
