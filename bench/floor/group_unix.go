//go:build unix

package main

import "syscall"

// ownGroup starts a command in a process group of its own.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
