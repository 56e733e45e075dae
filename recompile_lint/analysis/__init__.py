"""The static model: per-file facts, the project index, value flow, compiled regions, guards and variation."""
