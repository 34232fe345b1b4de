# The tfcluster CLI as a container image, and the way to add it to a TensorFlow image.
#
#   docker build -t tfcluster .                      # the `tfcluster` stage: the binary alone
#   docker build --target tensorflow -t tf-train .   # TensorFlow's image with tfcluster added
#
# The binary is linked statically against musl, so the runtime image is `FROM scratch`: one
# file, no shell, no libc, nothing to patch. It serves what needs no Python (`rendezvous
# serve`, `status`, `connect`, `resolve`); `tfcluster run` starts Python, so jobs run in an
# image with TensorFlow, which gets the binary with one line in its own Dockerfile:
#
#   COPY --from=tfcluster /usr/local/bin/tfcluster /usr/local/bin/tfcluster
#
# (`tfcluster` being this image's name in your registry), as the `tensorflow` stage below
# does. `cargo xtask image` builds the `tfcluster` and `tensorflow` stages from a binary built
# on the host (this machine reaches no image registry, so the `build` stage's base image is
# replaced by that binary) and runs `tfcluster --version` in each.

ARG RUST_VERSION=1.89
# The build stage's base. The release pins it by digest (`--build-arg BUILD_IMAGE=...@sha256:`,
# resolved once, so every platform builds from the same bytes); pin TENSORFLOW_IMAGE so too.
ARG BUILD_IMAGE=docker.io/library/rust:${RUST_VERSION}-bookworm
ARG TENSORFLOW_IMAGE=docker.io/tensorflow/tensorflow:2.21.0

# Builds for the platform it runs on (build each architecture natively or under emulation,
# e.g. `docker buildx build --platform linux/amd64,linux/arm64`): musl for that machine.
FROM ${BUILD_IMAGE} AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends musl-tools \
    && rm -rf /var/lib/apt/lists/* \
    && rustup target add "$(uname -m)-unknown-linux-musl"
WORKDIR /src
COPY . .
# `--locked`: the image builds exactly the dependencies Cargo.lock names, as CI tested them.
RUN cargo build --release --locked -p tfcluster --target "$(uname -m)-unknown-linux-musl" \
    && mkdir /out \
    && cp "target/$(uname -m)-unknown-linux-musl/release/tfcluster" /out/tfcluster \
    && strip /out/tfcluster

FROM scratch AS tfcluster
COPY --from=build /out/tfcluster /usr/local/bin/tfcluster
# Not root: the uid distroless images call nonroot (no user database here to name it).
USER 65532:65532
# No shell in the image: `docker run IMAGE rendezvous serve --listen 0.0.0.0:29400`.
ENTRYPOINT ["/usr/local/bin/tfcluster"]
CMD ["--help"]

# TensorFlow's image with tfcluster on its PATH: the image the manifests in deploy/kubernetes
# run. Put your own TensorFlow image in TENSORFLOW_IMAGE (`--build-arg`).
FROM ${TENSORFLOW_IMAGE} AS tensorflow
COPY --from=build /out/tfcluster /usr/local/bin/tfcluster
# Not root, as the manifests run it (runAsUser 1000); a Dockerfile built on this one that
# installs packages says `USER root` before and `USER 1000:1000` after.
USER 1000:1000
