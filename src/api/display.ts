// `status.display`: a status's byte figures as people read them, for the printer columns. The exact
// figures stay in their own fields, which is what scripts read.
import { Type } from './schema.ts';

/** The display object of a status; `fields` maps each field to the exact figure it rounds. */
export function DisplayFigures(fields: Record<string, string>) {
  return Type.Optional(
    Type.Object(
      Object.fromEntries(
        Object.entries(fields).map(([name, exact]) => [
          name,
          Type.Optional(
            Type.String({
              maxLength: 16,
              description: `${exact} as people write it: exact when a power-of-1024 unit divides it (8Gi), else rounded to one decimal (6.4Gi). Absent when ${exact} is absent. Scripts read ${exact}, which is exact.`,
            }),
          ),
        ]),
      ),
      {
        description:
          'The figures above as people read them, shown in the printer columns; written by the operator with the exact fields.',
      },
    ),
  );
}
