// Package planner decides which instances to launch and terminate to serve a forecast load at the
// lowest cost under the SLO (MArk's greedy Alg. 1, its SLO monitor and spot handling).
package planner
