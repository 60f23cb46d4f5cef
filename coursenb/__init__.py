"""The course's notebooks: chapter sources as text (`chapters`) and the cell conventions every
component shares (`cells`). Instructor side; the student kit `attnlab` never imports it."""
