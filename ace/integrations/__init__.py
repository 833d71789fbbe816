"""Skills into agent frameworks and their runs out into trace collections (`ace.integrations.pydantic_ai`)."""
