# sheriff: a multi-stage build. The builder compiles the locked dependency set; the runtime is a
# slim Debian with CA certificates, the default configuration, and an unprivileged user.
#
#   docker build -t sheriff .                      compiles in the rust stage, runs on bookworm-slim
#   podman build --target runtime \
#     --build-arg RUNTIME_BASE=localhost/debian-bookworm-rootfs \
#     --build-arg SHERIFF_BINARY=target/release/sheriff .
#                                                  takes a binary built beforehand (on bookworm, or
#                                                  a system with the same or an older glibc) and
#                                                  any bookworm root file system as the base;
#                                                  .ci/container-test builds and runs it this way
ARG RUNTIME_BASE=debian:bookworm-slim

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY src ./src
COPY migrations ./migrations
RUN cargo build --release --locked --bin sheriff

# What both images share. CA certificates come from the base when it has them (a root file
# system bootstrapped with them), else from apt. The user is numeric in USER, so a Kubernetes
# `runAsNonRoot` can verify it without a passwd lookup.
FROM ${RUNTIME_BASE} AS runtime-base
RUN if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && groupadd --gid 10001 sheriff \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/sheriff --create-home --shell /usr/sbin/nologin sheriff
COPY config/sheriff.toml /etc/sheriff/sheriff.toml
USER 10001:10001
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

# The runtime around a binary built beforehand, taken from the build context.
FROM runtime-base AS runtime
ARG SHERIFF_BINARY=target/release/sheriff
COPY ${SHERIFF_BINARY} /usr/local/bin/sheriff

# The default: the runtime around the binary the rust stage compiled.
FROM runtime-base
COPY --from=build /src/target/release/sheriff /usr/local/bin/sheriff
