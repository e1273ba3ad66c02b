# cairn's container image, for those who build their own (docs/install.md).
# The released image is built without a daemon by build/release, with the
# same layout: a static binary, a non-root user, /var/lib/cairn, nothing else.
#
#   docker build -t cairn .
#   docker run --rm -p 8500:8500 -p 8600:8600/udp cairn
#
# The version comes from git (the build context includes .git): a
# context without it builds a binary whose version is "-dev", revision "unknown".

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /rootfs/usr/bin/cairn ./cmd/cairn
RUN mkdir -p /rootfs/etc/cairn.d /rootfs/var/lib/cairn /rootfs/tmp \
 && cp build/release/files/container.hcl /rootfs/etc/cairn.d/cairn.hcl \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\ncairn:x:65532:65532:cairn agent:/var/lib/cairn:/sbin/nologin\n' >/rootfs/etc/passwd \
 && printf 'root:x:0:\ncairn:x:65532:\n' >/rootfs/etc/group \
 && printf 'hosts: files dns\n' >/rootfs/etc/nsswitch.conf \
 && chmod 1777 /rootfs/tmp \
 && chown 65532:65532 /rootfs/var/lib/cairn && chmod 0750 /rootfs/var/lib/cairn

FROM scratch
# COPY --from keeps the owners set above: /var/lib/cairn is the user's.
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /var/lib/cairn
VOLUME /var/lib/cairn
# HTTP API, DNS, server RPC, LAN and WAN gossip.
EXPOSE 8500/tcp 8600/udp 8600/tcp 8300/tcp 8301/tcp 8301/udp 8302/tcp 8302/udp
ENTRYPOINT ["/usr/bin/cairn", "agent", "-config-dir=/etc/cairn.d"]
# A plain "docker run" is a dev agent; any arguments replace -dev.
CMD ["-dev"]
