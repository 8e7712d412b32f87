module example.com/visits

go 1.24

require github.com/lib/pq v1.10.9
