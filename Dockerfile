# syntax=docker/dockerfile:1
# The hindsight image for the scale-out deployment (docker-compose.yml runs it as web, worker
# and beat against external PostgreSQL + pgvector and Redis).

# ---- dashboard front-end packages (Pico CSS, Chart.js): served by staticfiles from node_modules
FROM node:22-slim AS assets
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

# ---- the application
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # settings find templates/, static/ and node_modules/ next to the hindsight_site package,
    # so the code runs from the source tree; `pip install .` brings the dependencies.
    PYTHONPATH=/app \
    DJANGO_SETTINGS_MODULE=hindsight_site.settings \
    HINDSIGHT_DATA_DIR=/data

RUN useradd --create-home --uid 10001 hindsight \
    && mkdir /data \
    && chown hindsight:hindsight /data

WORKDIR /app
COPY . .
COPY --from=assets /app/node_modules ./node_modules
# The local embedder's tokenizer and model go to their default place, <sys.prefix>/share/hindsight.
RUN pip install ./clients/python . \
    && python scripts/fetch_tokenizer.py /usr/local/share/hindsight/tokenizer.json \
    && python scripts/build_embedding_model.py \
        /usr/local/share/hindsight/all-MiniLM-L6-v2-int8-dynamic.onnx \
    && rm -rf build ./*.egg-info

USER hindsight
EXPOSE 8000
# docker-compose.yml gives each service its own command; this is the web one.
CMD ["sh", "-c", "python manage.py migrate && python manage.py collectstatic --noinput && exec gunicorn hindsight_site.wsgi:application -b 0.0.0.0:8000 --workers ${HINDSIGHT_WEB_WORKERS:-3} --preload --config python:hindsight_site.gunicorn_conf"]
