"""The pipeline layer: the only code that reads Params and knows where the stages' files live."""
