// Package fuzztarget holds the bodies of chaoskit's fuzz targets, shared by
// the native targets in the packages' tests (go test -fuzz) and the go-fuzz
// targets here (gofuzz.go, built with the gofuzz tag): the contract
// language (Expect), the scenario loader (Parse) and the fault-schedule
// decoder (Schedule). Each panics on a broken property.
package fuzztarget
