# One image for every `placement` verb (ENTRYPOINT placement, default `run`):
#   the hub's placement controller  placement run --leader-elect --http-addr :8080 --workers 4
#                                   (config/manager)
#   the pod scheduler add-on        placement scheduler run --config ... --leader-elect
#                                   (config/addons/pod-scheduler, with its status controller)
#   the spot webhook add-on         placement webhook run --tls-cert-file ... (config/addons/spot-webhook)
#   offline checks                  placement validate | simulate | explain | scheduler simulate
# and the add-on authors' API (`import ocm_placement`; python -m ocm_placement.examples.*).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Only what the wheel is built from (see .dockerignore): no tests, no perf. The build hook
# (hatch_build.py) puts the packages under ocm_placement/ and the CRDs and samples in as package
# data, so `placement run --embedded` and `placement demo` work in the image too; the deployment
# manifests stay out.
WORKDIR /src
COPY pyproject.toml README.md hatch_build.py ./
COPY config/crds ./config/crds
COPY config/samples ./config/samples
COPY apis ./apis
COPY placement ./placement
COPY plugins ./plugins
COPY controllers ./controllers
COPY ocm_placement ./ocm_placement
# A regular (non-editable) install; pip byte-compiles here, as root, so the read-only root
# filesystem of the running container costs nothing at start-up.
RUN pip install . && rm -rf /src

# Numeric UID/GID so the kubelet can check runAsNonRoot without resolving a user name.
RUN groupadd --system --gid 65532 placement \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin placement
USER 65532:65532
WORKDIR /

EXPOSE 8080
ENTRYPOINT ["placement"]
CMD ["run"]
