"""Packaging beyond what pyproject.toml can declare: the repository's datasets/ folder ships inside the package
under its own import name, `switchboard_datasets` (api/shipped.py finds it), so a non-editable install serves
with its router and catalogue. A top-level package named `datasets` would shadow Hugging Face's in users'
environments, and datasets/ has no __init__.py for the same reason."""

from setuptools import find_packages, setup

SHIPPED = "switchboard_datasets"

setup(
    packages=[*find_packages(include=["api", "api.*", "flows", "flows.*", "storage", "storage.*"]),
              SHIPPED, f"{SHIPPED}.default_router", f"{SHIPPED}.catalogue"],
    package_dir={SHIPPED: "datasets"},
    package_data={"storage": ["*.sql", "migrations/*.sql"], SHIPPED: ["*.csv", "*.md", "*/*"]},
)
