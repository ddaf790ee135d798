// Package reliability holds Kura's fault-injection suite: tests that start
// the real kurad binary and kill it under load, fill its disk, cut its NATS
// doorbell, damage its database and flood it with hostile input, then check
// what docs/durability.md promises. The quick cases run with `go test`;
// `make reliability` runs the long ones (build tag reliability).
package reliability
