package main

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

func ginRoutes() http.Handler {
	r := gin.New()
	v1 := r.Group("/gin/v1")
	v1.GET("/users/:id", func(*gin.Context) {})
	v1.POST("/users", func(*gin.Context) {})
	files := v1.Group("/files")
	files.GET("/*filepath", func(*gin.Context) {})
	r.Handle("HEAD", "/gin/ping", func(*gin.Context) {})
	return r
}
