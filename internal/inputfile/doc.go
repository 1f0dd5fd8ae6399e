// Package inputfile decides which files admitc may read as input: a file
// it finds in a directory, or one a test file names, must be a regular
// file (or a directory to walk). A FIFO, socket or device there would make
// a read wait for a writer forever or never end. A path given on the
// command line is the user's choice and is not checked here, so that
// `admitc test <(kubectl get pods -o yaml)` streams. It imports only the
// standard library; the compiler, the runtime, verify and migrate use it.
package inputfile
