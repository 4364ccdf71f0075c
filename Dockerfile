# sheriff: a multi-stage build. The builder compiles the locked dependency set; the runtime is a
# slim Debian with CA certificates, the default configuration, and an unprivileged user.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY src ./src
COPY migrations ./migrations
RUN cargo build --release --locked --bin sheriff

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/sheriff --create-home sheriff
COPY --from=build /src/target/release/sheriff /usr/local/bin/sheriff
COPY config/sheriff.toml /etc/sheriff/sheriff.toml
USER sheriff
WORKDIR /var/lib/sheriff
# Secrets come from the environment (SHERIFF__SLACK__BOT_TOKEN, …) or *_file settings, never
# from this image. SQLite lives in the working directory unless SHERIFF__DATABASE__URL says
# otherwise; use PostgreSQL for several replicas.
ENV SHERIFF__SERVER__LISTEN=0.0.0.0:8080 \
    SHERIFF__LOG__FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["sheriff", "--config", "/etc/sheriff/sheriff.toml", "healthcheck"]
ENTRYPOINT ["sheriff", "--config", "/etc/sheriff/sheriff.toml"]
CMD ["serve"]
