module github.com/chaoskit/chaoskit/bench

go 1.26.0

replace github.com/chaoskit/chaoskit => ../

replace (
	github.com/chaoskit/chaoskit/breakerimpl => ../breakerimpl
	github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker/redisbreaker => ../breakerimpl/circuitbreaker/redisbreaker
	github.com/chaoskit/chaoskit/breakerimpl/grpcx => ../breakerimpl/grpcx
	github.com/chaoskit/chaoskit/breakerimpl/otelx => ../breakerimpl/otelx
	github.com/chaoskit/chaoskit/breakerimpl/prombreaker => ../breakerimpl/prombreaker
	github.com/chaoskit/chaoskit/breakerimpl/prompolicy => ../breakerimpl/prompolicy
	github.com/chaoskit/chaoskit/breakerimpl/promredislimit => ../breakerimpl/promredislimit
	github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit => ../breakerimpl/ratelimit/redislimit
	github.com/chaoskit/chaoskit/inject => ../inject
)

require (
	github.com/afex/hystrix-go v0.0.0-20180502004556-fa1af6a1f4f5
	github.com/chaoskit/chaoskit v0.0.0
	github.com/chaoskit/chaoskit/breakerimpl v0.0.0-00010101000000-000000000000
	github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker/redisbreaker v0.0.0-00010101000000-000000000000
	github.com/chaoskit/chaoskit/breakerimpl/grpcx v0.0.0-00010101000000-000000000000
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/zeromicro/go-zero v1.10.3
	golang.org/x/time v0.16.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chaoskit/chaoskit/breakerimpl/otelx v0.0.0-00010101000000-000000000000 // indirect
	github.com/fatih/color v1.19.0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/smartystreets/goconvey v1.8.1 // indirect
	github.com/spaolacci/murmur3 v1.1.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/automaxprocs v1.6.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260825221802-da73d73af1c5 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
