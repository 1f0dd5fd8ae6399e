#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from the Go module proxy (see
# tools/go.mod) into test/e2e/.bin/<version>/, once per machine: binaries
# already built for this version are kept. Fails loudly if a build fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S=v1.37.2
bin="$here/.bin/$K8S"
mkdir -p "$bin"
cd "$here/tools"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
build() { # name package
  if [ -x "$bin/$1" ]; then return; fi
  echo "building $1 ($2), this takes minutes on a cold cache" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/$1.tmp" "$2"
  mv "$bin/$1.tmp" "$bin/$1"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl
echo "$bin"
