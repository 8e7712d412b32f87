package main

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func echoRoutes() http.Handler {
	e := echo.New()
	g := e.Group("/echo/shop")
	g.GET("/orders/:orderId", func(echo.Context) error { return nil })
	g.DELETE("/orders/:orderId", func(echo.Context) error { return nil })
	e.GET("/echo/status", func(echo.Context) error { return nil })
	return e
}
