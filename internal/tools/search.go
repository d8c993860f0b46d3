package tools

import "github.com/modelcontextprotocol/go-sdk/mcp"

// addSearch registers terminal_rg and terminal_glob.
func (h *handlers) addSearch(s *mcp.Server) {}
