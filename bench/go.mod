module github.com/chaoskit/chaoskit/bench

go 1.26.8

replace github.com/chaoskit/chaoskit => ../

require (
	github.com/afex/hystrix-go v0.0.0-20180502004556-fa1af6a1f4f5 // indirect
	github.com/chaoskit/chaoskit v0.0.0 // indirect
	github.com/failsafe-go/failsafe-go v0.9.8 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	github.com/zeromicro/go-zero v1.10.3 // indirect
)
