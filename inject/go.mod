// Module inject is what a service imports to carry out chaoskit's faults
// in its failpoint markers. It is a module of its own so that a service's
// go.mod gains pingcap/failpoint and this, nothing of chaoskit's CLI.
module github.com/chaoskit/chaoskit/inject

go 1.21

require github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86

require github.com/pingcap/errors v0.11.4 // indirect
