// Package e2e runs admitc against a real kube-apiserver and etcd on
// loopback: the API server's own answers are the proof that admitc's
// compiled policies, webhook and offline decisions agree.
//
// The binaries are built from the Go module proxy by build-binaries.sh
// (module tools/), cached by version under .bin/. The tests carry the e2e
// build tag; run them with `make e2e` (part of `make test`).
package e2e
