# The one image the scheduler, controllers, webhook, certificates Job and node agent share.
#   docker build -t ghcr.io/caldera/caldera:0.1.0 .
# BASE must carry Python 3.11+ with venv; the default is the official slim image. Without a
# registry, a locally made base works too (tests/install/test_image.py: debootstrap + buildah).
ARG BASE=python:3.11-slim-bookworm

# --- build: the wheel from this repository, installed with its dependencies (the versions
# constraints.txt pins, never whatever is newest that day) into a venv ---------------------
FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY caldera caldera
COPY central central
COPY daemonset daemonset
COPY nodeagent nodeagent
RUN python3 -m venv /opt/caldera \
 && /opt/caldera/bin/pip install --no-cache-dir --upgrade pip wheel \
 && /opt/caldera/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
 && /opt/caldera/bin/pip install --no-cache-dir -c constraints.txt /wheels/caldera-*.whl \
 && /opt/caldera/bin/pip uninstall --yes pip wheel

# --- final: the venv only; no pip, no sources, no compiler; a non-root user -----------------
FROM ${BASE}
COPY --from=build /opt/caldera /opt/caldera
COPY LICENSE /usr/share/doc/caldera/LICENSE
ENV PATH=/opt/caldera/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# uid 1000 as the manifests' runAsUser; the agent's DaemonSet alone runs as root (cgroup files)
USER 1000:1000
ENTRYPOINT ["caldera"]
CMD ["--help"]
