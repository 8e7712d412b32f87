module example.com/diffservice

go 1.24

require (
	github.com/chaoskit/chaoskit/inject v0.0.0
	github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86
)

require github.com/pingcap/errors v0.11.4 // indirect

replace github.com/chaoskit/chaoskit/inject => ../../inject
